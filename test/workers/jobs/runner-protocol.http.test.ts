import { createMessageBatch, createExecutionContext, createScheduledController, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { inboxJob } from "../../factories/inbox-pools";
import { prepareJob } from "../../../src/jobs/submit";
import worker from "../../../src/workers/index";
import { TICK_NAMES, TICKS } from "../../../src/workers/cron/ticks";
import { call, createRunner, utilityJob } from "../../factories";

type Leased = { job_id: string; lease_id: string; attempt: number; kind: string; ack_required: boolean; payload: { prompt: string } };

async function leaseAll(token: string, capacity = 10, wait_ms = 0): Promise<Leased[]> {
  const res = await call("/v1/runner/lease", { token, body: { capacity, wait_ms, runtimes: ["offline", "claude"] } });
  expect(res.status).toBe(200);
  return res.body.jobs;
}

/**
 * Jobs enter through the dispatch queue; wait (long-poll) until the consumer has put them in the
 * inbox. Like the runner, acknowledge what a poll that waited handed out.
 */
async function leaseWhenDelivered(token: string, want: number): Promise<Leased[]> {
  const got: Leased[] = [];
  const deadline = Date.now() + 20_000;
  while (got.length < want && Date.now() < deadline) got.push(...(await leaseAll(token, want - got.length, 2_000)));
  for (const job of got) {
    if (!job.ack_required) continue;
    const ack = await call(`/v1/runner/jobs/${job.job_id}/ack`, { token, body: { lease_id: job.lease_id } });
    expect(ack.status).toBe(200);
  }
  return got;
}

describe("runner protocol through the Worker", () => {
  it("runs a diagnostic job end to end: POST → dispatch queue → lease → complete → GET shows the result and the trail", async () => {
    const runner = await createRunner();
    const submitted = await call("/v1/admin/jobs", { body: utilityJob({ prompt: "ping" }) });
    expect(submitted.status).toBe(202);
    const jobId = submitted.body.job_id;
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ job_id: jobId, kind: "utility", status: "queued", attempt: 0 });

    const [job] = await leaseWhenDelivered(runner.token, 1);
    expect(job).toMatchObject({ job_id: jobId, kind: "utility", attempt: 1, payload: { runtime: "offline", prompt: "ping" } });

    const extend = await call(`/v1/runner/jobs/${jobId}/extend`, {
      token: runner.token,
      body: { lease_id: job!.lease_id, extend_ms: 60_000 },
    });
    expect(extend.status).toBe(200);

    const result = { text: "[offline runtime] ping", runtime: "offline", duration_ms: 3 };
    const done = await call(`/v1/runner/jobs/${jobId}/complete`, { token: runner.token, body: { lease_id: job!.lease_id, result } });
    expect(done.status).toBe(200);
    const again = await call(`/v1/runner/jobs/${jobId}/complete`, { token: runner.token, body: { lease_id: job!.lease_id, result } });
    expect(again.status).toBe(200);
    expect(again.body.duplicate).toBe(true);

    const view = await call(`/v1/admin/jobs/${jobId}`);
    expect(view.body).toMatchObject({ status: "completed", attempt: 1, result });
    const trail = await call(`/v1/events?type=job.&subject=${jobId}`);
    expect(trail.body.events.map((e: { type: string }) => e.type)).toEqual(["job.queued", "job.leased", "job.completed"]);
  });

  it("answers 409 stale_lease for a completion, failure or extension under a lease that is not current", async () => {
    const runner = await createRunner();
    const { body } = await call("/v1/admin/jobs", { body: utilityJob() });
    const [job] = await leaseWhenDelivered(runner.token, 1);
    expect(job!.job_id).toBe(body.job_id);
    for (const [verb, payload] of [
      ["complete", { lease_id: "lease_0000000000000000", result: {} }],
      ["fail", { lease_id: "lease_0000000000000000", error: { code: "cli_error", message: "x" }, retryable: false }],
      ["extend", { lease_id: "lease_0000000000000000", extend_ms: 5_000 }],
    ] as const) {
      const res = await call(`/v1/runner/jobs/${job!.job_id}/${verb}`, { token: runner.token, body: payload });
      expect(res.status, verb).toBe(409);
      expect(res.body.code).toBe("stale_lease");
    }
    expect(
      (await call(`/v1/runner/jobs/job_ffffffffffffffff/complete`, { token: runner.token, body: { lease_id: job!.lease_id, result: {} } }))
        .status,
    ).toBe(404);
  });

  it("records a non-retryable failure with its code on the job", async () => {
    const runner = await createRunner();
    const { body } = await call("/v1/admin/jobs", { body: utilityJob({ runtime: "claude" }) });
    const [job] = await leaseWhenDelivered(runner.token, 1);
    const error = { code: "not_logged_in", message: "Not logged in · Please run /login" };
    const res = await call(`/v1/runner/jobs/${job!.job_id}/fail`, {
      token: runner.token,
      body: { lease_id: job!.lease_id, error, retryable: false },
    });
    expect(res.body).toMatchObject({ status: "failed" });
    expect((await call(`/v1/admin/jobs/${body.job_id}`)).body).toMatchObject({ status: "failed", error });
  });

  it("hands each of 5 jobs to exactly one of 20 concurrent lease calls", async () => {
    const runners = await Promise.all(Array.from({ length: 4 }, (_, i) => createRunner(`race-${i}`)));
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await call("/v1/admin/jobs", { body: utilityJob({ prompt: `race ${i}` }) })).body.job_id);
    // The queue feeds the inbox asynchronously; wait until all five are there without leasing any
    // (a probing lease would take a job out of the race).
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const inboxViews = await Promise.all([...ids].map((id) => inboxJob(env, id)));
      if (inboxViews.every((v) => v?.status === "queued")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const calls = Array.from({ length: 20 }, (_, i) =>
      call("/v1/runner/lease", { token: runners[i % 4]!.token, body: { capacity: 1, wait_ms: 0, runtimes: ["offline"] } }),
    );
    const leased = (await Promise.all(calls)).flatMap((r) => r.body.jobs as Leased[]);
    expect(leased).toHaveLength(5);
    expect(new Set(leased.map((j) => j.job_id))).toEqual(ids);
  });

  it("lapses an expired lease from the leases tick and re-leases the job with attempt+1; after 3 lapses it is dead with a reason", async () => {
    const runner = await createRunner();
    const { body } = await call("/v1/admin/jobs", { body: utilityJob({ prompt: "lapse" }) });
    const [first] = await leaseWhenDelivered(runner.token, 1);
    expect(first).toMatchObject({ job_id: body.job_id, attempt: 1 });
    for (const attempt of [2, 3]) {
      await call("/v1/admin/clock", { body: { advance_ms: 61_000 } });
      const tick = await call("/v1/admin/ticks/leases", { method: "POST" });
      // The inbox also applies its time rules lazily on every call and from its alarm, so on a busy
      // machine the lapse may already have happened when the tick runs: its count is not ours to
      // assert. What must hold is below: the job comes back with attempt+1, once per lapse.
      expect(tick.body).toMatchObject({ ran: "leases", summary: { requeued: expect.any(Number) } });
      const again = (await leaseAll(runner.token, 50)).find((j) => j.job_id === body.job_id);
      expect(again).toMatchObject({ job_id: body.job_id, attempt });
    }
    await call("/v1/admin/clock", { body: { advance_ms: 61_000 } });
    // the cron path runs the same tick
    const ctrl = createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" });
    await worker.scheduled(ctrl, env);
    expect((await call(`/v1/admin/jobs/${body.job_id}`)).body).toMatchObject({
      status: "dead",
      attempt: 3,
      error: { code: "lease_expired" },
    });
    const requeued = await call(`/v1/events?type=job.requeued&subject=${body.job_id}`);
    expect(requeued.body.events.map((e: { payload: { reason?: string } }) => e.payload.reason)).toEqual(["lease_expired", "lease_expired"]);
    const dead = await call(`/v1/events?type=job.dead&subject=${body.job_id}`);
    expect(dead.body.events).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({ reason: "lease_expired", owner: { kind: "admin", id: "bootstrap-admin" } }),
      }),
    ]);
  });

  it("answers 404 for a tick that is not part of this build and 422 for a name that is no tick", async () => {
    // Features register their ticks as they land: whichever API tick is not built yet.
    const unbuilt = TICK_NAMES.find((name) => !TICKS.has(name));
    if (unbuilt) expect((await call(`/v1/admin/ticks/${unbuilt}`, { method: "POST" })).status).toBe(404);
    expect((await call("/v1/admin/ticks/bogus", { method: "POST" })).status).toBe(422);
  });
});

describe("dispatch queue consumers", () => {
  it("acknowledges and records a message that does not validate instead of retrying it forever", async () => {
    const batch = createMessageBatch("crewplane-dispatch", [{ id: "m-bad", timestamp: new Date(), attempts: 1, body: { job_id: "nope" } }]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(["m-bad"]);
    const feed = await call("/v1/events?type=dispatch.rejected&subject=m-bad");
    expect(feed.body.events[0].payload.issues.length).toBeGreaterThan(0);
  });

  it("marks a job dead with reason dispatch_failed when its message is dead-lettered", async () => {
    // Recorded but never sent, so the real dispatch queue cannot put it into the inbox meanwhile
    // (a dead letter for a job the inbox holds is left alone: dispatch-dlq.http.test.ts).
    const db = getDb(env.DB);
    const prepared = prepareJob(
      db,
      { kind: "utility", payload: { runtime: "grok", prompt: "x", timeout_ms: 60_000 }, owner: { kind: "admin", id: "a" } },
      new Date(),
    );
    await db.batch(prepared.statements);
    const body = { job_id: prepared.jobId };
    const message = prepared.message;
    const batch = createMessageBatch("crewplane-dispatch-dlq", [{ id: "m-dead", timestamp: new Date(), attempts: 6, body: message }]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["m-dead"]);
    expect((await call(`/v1/admin/jobs/${body.job_id}`)).body).toMatchObject({ status: "dead", error: { code: "dispatch_failed" } });
  });
});
