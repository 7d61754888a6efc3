import { describe, expect, it } from "vitest";
import { DAY_MS, dispatchOf, enqueueJob, freshInbox, leaseFrom, recordingOwnerCalls } from "../../factories/inbox";

/**
 * Holds in one RunnerInbox (src/jobs/holds.ts decides them from D1): a job of a paused employee, or
 * of a project or company over budget, is `held`, never leased and never timed out while held; a
 * retired employee's untaken jobs end `dead`. Each inbox of its own, driven with explicit clocks.
 */
/** An employee's own run (`employee_turn`): its payload names the employee. */
const ofEmployee = (employee_id: string) => ({
  kind: "employee_turn" as const,
  payload: {
    runtime: "offline",
    model: "offline",
    employee_id,
    employee: { name: employee_id, capabilities: { allowed_tools: [], denied_tools: [] }, sandbox_enabled: false },
    purpose: "goal_round",
    prompt: "x",
    timeout_ms: 60_000,
  } as never,
});

describe("RunnerInbox holds", () => {
  it("holds queued jobs under a key, leases the others, and gives the held ones back in order when lifted", async () => {
    const stub = freshInbox();
    const now = Date.now();
    const a1 = await enqueueJob(stub, now, ofEmployee("ann"));
    const b1 = await enqueueJob(stub, now + 1, ofEmployee("ben"));
    expect(await stub.syncHolds({ keys: ["employee:ann"], now: now + 2 })).toEqual({ held: 1, released: 0 });
    // Arriving under the hold, it is held at once.
    const a2 = await enqueueJob(stub, now + 3, ofEmployee("ann"));
    expect((await stub.get(a2.job_id))).toMatchObject({ status: "queued", held: true });
    expect((await leaseFrom(stub, now + 4, { capacity: 10 })).map((j) => j.job_id)).toEqual([b1.job_id]);

    expect(await stub.syncHolds({ keys: [], now: now + 5 })).toEqual({ held: 0, released: 2 });
    expect((await leaseFrom(stub, now + 6, { capacity: 10 })).map((j) => j.job_id)).toEqual([a1.job_id, a2.job_id]);
  });

  it("does not time a held job out, and gives it a fresh queue-time limit when lifted", async () => {
    const stub = freshInbox();
    const now = Date.now();
    const job = await enqueueJob(stub, now, ofEmployee("cal"), 60_000);
    await stub.syncHolds({ keys: ["employee:cal"], now });
    // Long past its queue-time limit while held: still there.
    await stub.sweep({ now: now + 10 * 60_000 });
    expect(await stub.get(job.job_id)).toMatchObject({ status: "queued", held: true });
    await stub.syncHolds({ keys: [], now: now + 10 * 60_000 });
    await stub.sweep({ now: now + 10 * 60_000 + 30_000 });
    expect(await stub.get(job.job_id)).toMatchObject({ status: "queued" });
    expect((await stub.get(job.job_id))!.held).toBeUndefined();
    await stub.sweep({ now: now + 10 * 60_000 + 61_000 });
    expect(await stub.get(job.job_id)).toMatchObject({ status: "dead" });
  });

  it("holds a retried job again when it comes back to the queue under a hold", async () => {
    const stub = freshInbox();
    const now = Date.now();
    const job = await enqueueJob(stub, now, ofEmployee("dee"));
    const [leased] = await leaseFrom(stub, now);
    await stub.syncHolds({ keys: ["employee:dee"], now: now + 1 });
    const failed = await stub.fail({
      runnerId: "rnr_a",
      jobId: job.job_id,
      leaseId: leased!.lease_id,
      error: { code: "cli_error", message: "try again" },
      retryable: true,
      now: now + 2,
    });
    expect(failed).toMatchObject({ ok: true, status: "queued" });
    expect(await leaseFrom(stub, now + 3, { capacity: 5 })).toEqual([]);
    expect(await stub.get(job.job_id)).toMatchObject({ held: true });
  });

  it("holds a project's and the whole company's jobs under their keys", async () => {
    const stub = freshInbox();
    const now = Date.now();
    const project = await enqueueJob(stub, now, { owner: { kind: "project", id: "prj_1" } });
    const other = await enqueueJob(stub, now + 1);
    await stub.syncHolds({ keys: ["project:prj_1"], now: now + 2 });
    expect((await leaseFrom(stub, now + 3, { capacity: 5 })).map((j) => j.job_id)).toEqual([other.job_id]);
    const late = await enqueueJob(stub, now + 4);
    await stub.syncHolds({ keys: ["company"], now: now + 5 });
    expect(await leaseFrom(stub, now + 6, { capacity: 5 })).toEqual([]);
    expect(await stub.heldCounts()).toEqual({
      keys: ["company"],
      held_jobs: expect.arrayContaining([
        { employee_id: null, project_id: "prj_1", jobs: 1 },
        { employee_id: null, project_id: null, jobs: 1 },
      ]),
    });
    await stub.syncHolds({ keys: [], now: now + 7 });
    expect((await leaseFrom(stub, now + 8, { capacity: 5 })).map((j) => j.job_id)).toEqual([project.job_id, late.job_id]);
  });

  it("ends a retired employee's untaken jobs, also one that arrives later, and tells their owners", async () => {
    await recordingOwnerCalls(async (calls) => {
      const stub = freshInbox();
      const now = Date.now();
      const queued = await enqueueJob(stub, now, ofEmployee("eve"));
      await stub.syncHolds({ keys: ["retired:eve"], now: now + 1 });
      expect(await stub.get(queued.job_id)).toMatchObject({ status: "dead" });
      const message = dispatchOf({ enqueued_at: new Date(now + 2).toISOString(), ...ofEmployee("eve") });
      await stub.enqueue({ message, maxAttempts: 3, maxQueueMs: DAY_MS, now: now + 2 });
      expect(await stub.get(message.job_id)).toMatchObject({ status: "dead" });
      expect(calls.filter((c) => c.error?.code === "employee_retired").map((c) => c.job_id).sort()).toEqual(
        [queued.job_id, message.job_id].sort(),
      );
    });
  });
});
