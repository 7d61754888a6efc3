import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { inboxJob } from "../../factories/inbox-pools";
import { prepareJob, submitJob } from "../../../src/jobs/submit";
import { call, createRunner } from "../../factories";
import { eventually, recordingOwnerCalls } from "../../factories/inbox";
import { leaseJob, submitDelivered } from "../../factories/runner-protocol";

const MINUTE = 60_000;

/** A job recorded in D1 whose dispatch message never made it (refused, or lost when the Worker stopped). */
async function recordWithoutDispatch(runtime = "offline"): Promise<string> {
  const db = getDb(env.DB);
  const now = (await call("/v1/admin/clock")).body.now as string;
  const prepared = prepareJob(
    db,
    {
      kind: "utility",
      payload: { runtime, prompt: "lost on the way", timeout_ms: 60_000 } as never,
      owner: { kind: "admin", id: "reconcile-test" },
    },
    new Date(now),
  );
  await db.batch(prepared.statements);
  return prepared.jobId;
}

const tick = async () => (await call("/v1/admin/ticks/leases", { method: "POST" })).body.summary;

// Tests here move the test clock forward; they run in order and each only looks at its own jobs.
describe("reconciling D1 with the inbox (issue 5, item 3)", () => {
  it("re-dispatches a job queued in D1 that never reached the inbox once the grace period passed, exactly once", async () => {
    const runner = await createRunner("reconciled");
    const lost = await recordWithoutDispatch();
    const arrived = await submitDelivered({ prompt: "arrived normally" });

    expect((await tick()).reconciled).toMatchObject({ redispatched: 0 });
    expect(await inboxJob(env, lost)).toBeNull();

    await call("/v1/admin/clock", { body: { advance_ms: 2 * MINUTE + 1_000 } });
    const first = await tick();
    expect(first.reconciled).toMatchObject({ redispatched: 1 });
    expect(first.reconciled.examined).toBeGreaterThanOrEqual(2);
    expect(await inboxJob(env, lost)).toMatchObject({ status: "queued", attempt: 0 });
    // the inbox ignores what it already holds: a second tick adopts nothing
    expect((await tick()).reconciled).toMatchObject({ redispatched: 0 });
    expect(await inboxJob(env, arrived)).toMatchObject({ status: "queued", attempt: 0 });

    const job = await leaseJob(runner.token, lost);
    expect(job).toMatchObject({ attempt: 1, payload: { prompt: "lost on the way" } });
    await call(`/v1/runner/jobs/${lost}/complete`, { token: runner.token, body: { lease_id: job.lease_id, result: { text: "ok" } } });
    expect((await call(`/v1/admin/jobs/${lost}`)).body).toMatchObject({ status: "completed", attempt: 1 });
  });

  it("dispatches a submission whose deferred message the queue refused: accepted once recorded, in the inbox after the grace", async () => {
    const runner = await createRunner("refused-dispatch");
    const now = (await call("/v1/admin/clock")).body.now as string;
    const deferred: Promise<unknown>[] = [];
    const refusing = { DISPATCH: { sendBatch: () => Promise.reject(new Error("queue unavailable")) } as unknown as Queue };
    const { job_id } = await submitJob(
      refusing,
      getDb(env.DB),
      {
        kind: "utility",
        payload: { runtime: "offline", prompt: "refused on the way", timeout_ms: 60_000 },
        owner: { kind: "admin", id: "a" },
      },
      new Date(now),
      { defer: (work) => void deferred.push(work) },
    );
    await Promise.all(deferred); // the refusal is logged, not thrown at the request that kept the work
    expect((await call(`/v1/admin/jobs/${job_id}`)).body).toMatchObject({ status: "queued", attempt: 0 });
    expect(await inboxJob(env, job_id)).toBeNull();

    await call("/v1/admin/clock", { body: { advance_ms: 2 * MINUTE + 1_000 } });
    expect((await tick()).reconciled.redispatched).toBeGreaterThanOrEqual(1);
    expect(await inboxJob(env, job_id)).toMatchObject({ status: "queued", attempt: 0 });
    const job = await leaseJob(runner.token, job_id);
    expect(job).toMatchObject({ attempt: 1, payload: { prompt: "refused on the way" } });
  });

  it("gives up jobs queued past runner.max_queue_ms as dead with no_runner, in the inbox and in D1 alone, and tells their owners", async () => {
    await recordingOwnerCalls(async (calls) => {
      const unserved = await submitDelivered({ runtime: "grok", prompt: "nobody offers grok" });
      const neverArrived = await recordWithoutDispatch("codex");
      await call("/v1/admin/clock", { body: { advance_ms: 24 * 60 * MINUTE } });
      const summary = await tick();
      expect(summary.no_runner).toBeGreaterThanOrEqual(1);

      for (const jobId of [unserved, neverArrived]) {
        const view = (await call(`/v1/admin/jobs/${jobId}`)).body;
        expect(view, jobId).toMatchObject({ status: "dead", attempt: 0, error: { code: "no_runner" } });
        const dead = await call(`/v1/events?type=job.dead&subject=${jobId}`);
        expect(dead.body.events, jobId).toEqual([expect.objectContaining({ payload: expect.objectContaining({ reason: "no_runner" }) })]);
        const told = await eventually(async () => calls.find((c) => c.job_id === jobId));
        expect(told, jobId).toMatchObject({ status: "dead", reason: "no_runner", owner: { kind: "admin" } });
      }
    });
  });

  it("keeps the queue-time limit configurable: a shorter runner.max_queue_ms gives up sooner", async () => {
    expect((await call("/v1/config/runner", { method: "PUT", body: { max_queue_ms: 5 * MINUTE } })).status).toBe(200);
    try {
      const jobId = await submitDelivered({ runtime: "antigravity", prompt: "short fuse" });
      await call("/v1/admin/clock", { body: { advance_ms: 4 * MINUTE } });
      await tick();
      expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "queued" });
      await call("/v1/admin/clock", { body: { advance_ms: 2 * MINUTE } });
      await tick();
      expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "dead", error: { code: "no_runner" } });
    } finally {
      await call("/v1/config/runner", { method: "PUT", body: {} });
    }
  });

  it("prunes finished jobs from the inbox after runner.retain_finished_hours while D1 keeps their record", async () => {
    const runner = await createRunner("pruned");
    const jobId = await submitDelivered({ prompt: "to be pruned" });
    const job = await leaseJob(runner.token, jobId);
    await call(`/v1/runner/jobs/${jobId}/complete`, {
      token: runner.token,
      body: { lease_id: job.lease_id, result: { text: "kept in D1" } },
    });
    await call("/v1/admin/clock", { body: { advance_ms: 23 * 60 * MINUTE } });
    expect((await tick()).pruned).toBe(0);
    expect(await inboxJob(env, jobId)).toMatchObject({ status: "completed" });
    await call("/v1/admin/clock", { body: { advance_ms: 2 * 60 * MINUTE } });
    expect((await tick()).pruned).toBeGreaterThanOrEqual(1);
    expect(await inboxJob(env, jobId)).toBeNull();
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "completed", result: { text: "kept in D1" } });
  });
});
