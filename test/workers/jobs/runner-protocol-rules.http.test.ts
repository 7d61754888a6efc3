import { describe, expect, it } from "vitest";
import { JOB_LIMITS } from "../../../src/jobs/limits";
import { call, createRunner } from "../../factories";
import { leaseJob, leaseOnce, submitDelivered } from "../../factories/runner-protocol";

const complete = (token: string, jobId: string, body: unknown) => call(`/v1/runner/jobs/${jobId}/complete`, { token, body });

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < depth; i++) value = { d: value };
  return value;
}

describe("job sizes are limited in UTF-8 bytes, before any work", () => {
  it("refuses a prompt over 64 KiB of UTF-8 even when it has fewer characters than that, naming the limit", async () => {
    // 40,000 characters, 80,000 bytes
    const tooBig = await call("/v1/admin/jobs", { body: { kind: "utility", runtime: "offline", prompt: "é".repeat(40_000) } });
    expect(tooBig.status).toBe(422);
    expect(tooBig.body.errors).toEqual([expect.objectContaining({ path: "prompt", message: expect.stringContaining("65536 bytes") })]);
    const fits = await call("/v1/admin/jobs", { body: { kind: "utility", runtime: "offline", prompt: "é".repeat(30_000) } });
    expect(fits.status).toBe(202);
  });

  it("answers 413 for a result over 512 KiB and 422 for one nested 5,000 deep, and leaves the job leased for a proper answer", async () => {
    const runner = await createRunner("sizes");
    const jobId = await submitDelivered();
    const job = await leaseJob(runner.token, jobId);

    const big = await complete(runner.token, jobId, { lease_id: job.lease_id, result: { text: "x".repeat(JOB_LIMITS.resultBytes) } });
    expect(big.status).toBe(413);
    expect(big.headers.get("content-type")).toContain("application/problem+json");
    expect(big.body).toMatchObject({ code: "payload_too_large", limit: "result_bytes", limit_bytes: 524_288 });

    const huge = await complete(runner.token, jobId, { lease_id: job.lease_id, result: { text: "x".repeat(10_000_000) } });
    expect(huge.status).toBe(413);

    const deep = await call(`/v1/runner/jobs/${jobId}/complete`, {
      token: runner.token,
      rawBody: `{"lease_id":"${job.lease_id}","result":${JSON.stringify(nested(5_000))}}`,
    });
    expect(deep.status).toBe(422);
    expect(deep.body).toMatchObject({ code: "validation_failed", limit: "result_depth", limit_depth: 64 });
    expect(deep.body.errors).toEqual([expect.objectContaining({ path: "result" })]);

    // 64 levels is allowed
    const fine = await complete(runner.token, jobId, { lease_id: job.lease_id, result: nested(64) });
    expect(fine.status).toBe(200);
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "completed", attempt: 1 });
  });

  it("keeps the job leased after a refused result so the runner can still fail it as result_too_large", async () => {
    const runner = await createRunner("too-large");
    const jobId = await submitDelivered();
    const job = await leaseJob(runner.token, jobId);
    expect((await complete(runner.token, jobId, { lease_id: job.lease_id, result: { text: "y".repeat(600_000) } })).status).toBe(413);
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "leased", attempt: 1 });
    const failed = await call(`/v1/runner/jobs/${jobId}/fail`, {
      token: runner.token,
      body: { lease_id: job.lease_id, error: { code: "result_too_large", message: "600000 bytes" }, retryable: false },
    });
    expect(failed.status).toBe(200);
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "failed", error: { code: "result_too_large" } });
  });
});

describe("completion semantics", () => {
  it("answers a repeated completion with the same result 200 and one with a different result 409 result_conflict", async () => {
    const runner = await createRunner("conflict");
    const jobId = await submitDelivered();
    const job = await leaseJob(runner.token, jobId);
    const result = { text: "first", runtime: "offline", usage: { input_tokens: 3 } };
    expect((await complete(runner.token, jobId, { lease_id: job.lease_id, result })).body).toMatchObject({ duplicate: false });
    // the same result with its keys in another order is the same result
    const same = await complete(runner.token, jobId, {
      lease_id: job.lease_id,
      result: { usage: { input_tokens: 3 }, runtime: "offline", text: "first" },
    });
    expect(same.status).toBe(200);
    expect(same.body.duplicate).toBe(true);
    const other = await complete(runner.token, jobId, { lease_id: job.lease_id, result: { text: "second", runtime: "offline" } });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: "result_conflict", status: 409, job_status: "completed" });
    expect((await call(`/v1/admin/jobs/${jobId}`)).body.result).toEqual(result);
  });

  it("refuses another runner's extend, ack, complete and fail under a lease it does not hold, with the job's status in job_status", async () => {
    const owner = await createRunner("holder");
    const intruder = await createRunner("intruder");
    const jobId = await submitDelivered();
    const job = await leaseJob(owner.token, jobId);
    for (const [verb, body] of [
      ["extend", { lease_id: job.lease_id, extend_ms: 60_000 }],
      ["ack", { lease_id: job.lease_id }],
      ["complete", { lease_id: job.lease_id, result: { text: "stolen" } }],
      ["fail", { lease_id: job.lease_id, error: { code: "cli_error", message: "x" }, retryable: false }],
    ] as const) {
      const res = await call(`/v1/runner/jobs/${jobId}/${verb}`, { token: intruder.token, body });
      expect(res.status, verb).toBe(409);
      expect(res.body, verb).toMatchObject({ code: "stale_lease", status: 409, job_status: "leased", job_id: jobId });
    }
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "leased", attempt: 1 });
    expect((await complete(owner.token, jobId, { lease_id: job.lease_id, result: { text: "mine" } })).status).toBe(200);
  });

  it("shows a finished job's result without the earlier attempt's error, which stays in its attempt history", async () => {
    const runner = await createRunner("history");
    const jobId = await submitDelivered();
    const first = await leaseJob(runner.token, jobId);
    const timeout = { code: "timeout", message: "no result after 600 s" };
    await call(`/v1/runner/jobs/${jobId}/fail`, {
      token: runner.token,
      body: { lease_id: first.lease_id, error: timeout, retryable: true },
    });
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "queued", attempt: 1 });
    const second = await leaseJob(runner.token, jobId);
    expect(second.attempt).toBe(2);
    const result = { text: "done", runtime: "offline" };
    await complete(runner.token, jobId, { lease_id: second.lease_id, result });

    const view = (await call(`/v1/admin/jobs/${jobId}`)).body;
    expect(view).toMatchObject({ status: "completed", attempt: 2, result });
    expect(view).not.toHaveProperty("error");
    expect(view.attempts).toEqual([
      { attempt: 1, runner_id: runner.id, status: "failed", error: timeout, started_at: expect.any(String), ended_at: expect.any(String) },
      { attempt: 2, runner_id: runner.id, status: "completed", started_at: expect.any(String), ended_at: expect.any(String) },
    ]);
  });
});

describe("runner request bodies and lease responses", () => {
  it("leases for the runtimes this Worker knows and reports the ones it ignored", async () => {
    const runner = await createRunner("future");
    const jobId = await submitDelivered({ prompt: "known runtime" });
    const res = await leaseOnce(runner.token, { capacity: 50, runtimes: ["quantum", "offline", "quantum", "gemini-9"] });
    expect(res.status).toBe(200);
    expect(res.body.jobs.map((j: { job_id: string }) => j.job_id)).toContain(jobId);
    expect(res.body.ignored_runtimes).toEqual(["quantum", "gemini-9"]);

    const none = await leaseOnce(runner.token, { runtimes: ["quantum"] });
    expect(none.body).toMatchObject({ jobs: [], ignored_runtimes: ["quantum"] });
    const hostile = await leaseOnce(runner.token, { runtimes: ["offline", "bad\u202Ename"] });
    expect(hostile.status).toBe(422);
  });

  it("returns the runner settings with every lease, following the runner config", async () => {
    const runner = await createRunner("settings");
    expect((await leaseOnce(runner.token)).body.settings).toEqual({ keep_failed_work_hours: 24 });
    expect((await call("/v1/config/runner", { method: "PUT", body: { keep_failed_work_hours: 48 } })).status).toBe(200);
    expect((await leaseOnce(runner.token)).body.settings).toEqual({ keep_failed_work_hours: 48 });
    await call("/v1/config/runner", { method: "PUT", body: {} });
  });

  it("refuses an unknown field in every runner body with 422 and changes nothing", async () => {
    const runner = await createRunner("strict");
    const jobId = await submitDelivered();
    const job = await leaseJob(runner.token, jobId);
    const cases: [string, Record<string, unknown>][] = [
      ["/v1/runner/lease", { capacity: 1, runtimes: ["offline"], sneaky: 1 }],
      [`/v1/runner/jobs/${jobId}/ack`, { lease_id: job.lease_id, sneaky: 1 }],
      [`/v1/runner/jobs/${jobId}/extend`, { lease_id: job.lease_id, extend_ms: 60_000, sneaky: 1 }],
      [`/v1/runner/jobs/${jobId}/complete`, { lease_id: job.lease_id, result: {}, sneaky: 1 }],
      [`/v1/runner/jobs/${jobId}/fail`, { lease_id: job.lease_id, error: { code: "x", message: "y" }, retryable: false, sneaky: 1 }],
      [`/v1/runner/jobs/${jobId}/fail`, { lease_id: job.lease_id, error: { code: "x", message: "y", sneaky: 1 }, retryable: false }],
      ["/v1/runner/polls/poll-abcdefgh/cancel", { sneaky: 1 }],
    ];
    for (const [path, body] of cases) {
      const res = await call(path, { token: runner.token, body });
      expect(res.status, path).toBe(422);
      expect(res.body.code, path).toBe("validation_failed");
    }
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "leased", attempt: 1 });
  });
});
