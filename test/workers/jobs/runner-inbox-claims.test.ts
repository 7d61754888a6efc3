import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { LeasedJob } from "../../../src/durable-objects/runner-inbox-rpc";
import { ACK_WINDOW_MS, enqueueJob, eventually, freshInbox, leaseFrom, recordingOwnerCalls, sleep } from "../../factories/inbox";

/** The inbox's D1 trail for one job (the outbox delivers before each call returns). */
async function trail(jobId: string) {
  const { results } = await env.DB.prepare(`SELECT type, payload FROM events WHERE subject = ? ORDER BY id`).bind(jobId).all<{
    type: string;
    payload: string;
  }>();
  return results.map((r) => ({ type: r.type, ...(JSON.parse(r.payload) as { reason?: string; attempt: number }) }));
}

describe("RunnerInbox: a claim made after a long-poll waited is provisional", () => {
  it("treats a claim made without waiting as acknowledged by the response: it stays leased past the ack window", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const msg = await enqueueJob(stub, t0);
    const [job] = await leaseFrom(stub, t0);
    expect(job).toMatchObject({ job_id: msg.job_id, ack_required: false, attempt: 1 });
    expect(await stub.sweep({ now: t0 + ACK_WINDOW_MS + 1 })).toMatchObject({ unacknowledged: 0 });
    expect(await stub.get(msg.job_id)).toMatchObject({ status: "leased", attempt: 1, acknowledged: true });
  });

  it("returns an unacknowledged claim to the queue after the ack window without counting the attempt, and wakes a waiting poll that takes it at attempt 1", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    // a runner that dies while its poll waits: the poll still claims what arrives
    const abandoned = leaseFrom(stub, t0, { runnerId: "rnr_dead", waitMs: 20_000 });
    await sleep(50);
    const msg = await enqueueJob(stub, t0);
    const [claim] = await abandoned;
    expect(claim).toMatchObject({ job_id: msg.job_id, attempt: 1, ack_required: true, ack_within_ms: ACK_WINDOW_MS });

    const claimedAt = Date.parse(claim!.lease_expires_at) - claim!.lease_ms;

    const replacement = leaseFrom(stub, t0, { runnerId: "rnr_new", waitMs: 20_000 });
    await sleep(50);
    expect(await stub.sweep({ now: claimedAt + ACK_WINDOW_MS - 1 })).toMatchObject({ unacknowledged: 0 });
    expect(await stub.sweep({ now: claimedAt + ACK_WINDOW_MS })).toMatchObject({ unacknowledged: 1, requeued: 0 });
    const [again] = await replacement;
    expect(again).toMatchObject({ job_id: msg.job_id, attempt: 1 });
    expect(again!.lease_id).not.toBe(claim!.lease_id);

    const types = await trail(msg.job_id);
    expect(types.map((e) => [e.type, e.reason ?? null, e.attempt])).toEqual([
      ["job.leased", null, 1],
      ["job.requeued", "lease_unacknowledged", 0],
      ["job.leased", null, 1],
    ]);
  });

  it("keeps a provisional claim its runner acknowledges, by ack or by its first extend", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const polls = [leaseFrom(stub, t0, { waitMs: 20_000 }), leaseFrom(stub, t0, { waitMs: 20_000 })];
    await sleep(50);
    await enqueueJob(stub, t0);
    await enqueueJob(stub, t0);
    const [first, second] = (await Promise.all(polls)) as LeasedJob[][];
    const [byAck, byExtend] = [first![0], second![0]];
    expect([byAck!.ack_required, byExtend!.ack_required]).toEqual([true, true]);

    const acked = await stub.ack({ runnerId: "rnr_a", jobId: byAck!.job_id, leaseId: byAck!.lease_id, now: t0 + 1_000 });
    expect(acked).toEqual({ ok: true, lease_expires_at: byAck!.lease_expires_at });
    // acknowledging twice is harmless
    expect(await stub.ack({ runnerId: "rnr_a", jobId: byAck!.job_id, leaseId: byAck!.lease_id, now: t0 + 1_000 })).toMatchObject({
      ok: true,
    });
    const extended = await stub.extend({
      runnerId: "rnr_a",
      jobId: byExtend!.job_id,
      leaseId: byExtend!.lease_id,
      extendMs: 30_000,
      now: t0 + 1_000,
    });
    expect(extended).toMatchObject({ ok: true });

    expect(await stub.sweep({ now: t0 + 1_000 + ACK_WINDOW_MS })).toMatchObject({ unacknowledged: 0 });
    expect(await stub.get(byAck!.job_id)).toMatchObject({ status: "leased", attempt: 1, acknowledged: true });
    expect(await stub.get(byExtend!.job_id)).toMatchObject({ status: "leased", attempt: 1, acknowledged: true });
  });

  it("refuses an ack from another runner and an ack that comes after the claim went back to the queue", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const poll = leaseFrom(stub, t0, { waitMs: 20_000 });
    await sleep(50);
    const msg = await enqueueJob(stub, t0);
    const [claim] = await poll;
    const foreign = await stub.ack({ runnerId: "rnr_b", jobId: msg.job_id, leaseId: claim!.lease_id, now: t0 + 1 });
    expect(foreign).toEqual({ ok: false, reason: "stale_lease", status: "leased" });
    const claimedAt = Date.parse(claim!.lease_expires_at) - claim!.lease_ms;
    const late = await stub.ack({ runnerId: "rnr_a", jobId: msg.job_id, leaseId: claim!.lease_id, now: claimedAt + ACK_WINDOW_MS });
    expect(late).toEqual({ ok: false, reason: "stale_lease", status: "queued" });
    expect(await stub.get(msg.job_id)).toMatchObject({ status: "queued", attempt: 0 });
    expect(await stub.ack({ runnerId: "rnr_a", jobId: "job_0000000000000000", leaseId: claim!.lease_id, now: t0 })).toEqual({
      ok: false,
      reason: "not_found",
    });
  });

  it("hands an unacknowledged claim to a waiting poll from its alarm alone, in real time", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const abandoned = leaseFrom(stub, t0, { runnerId: "rnr_dead", waitMs: 20_000, ackWindowMs: 1_000 });
    await sleep(50);
    const msg = await enqueueJob(stub, t0);
    expect((await abandoned)[0]).toMatchObject({ job_id: msg.job_id, ack_required: true });
    // nobody calls the inbox from here on but this poll: the alarm must release the claim
    const [again] = await leaseFrom(stub, Date.now(), { runnerId: "rnr_new", waitMs: 20_000 });
    expect(again).toMatchObject({ job_id: msg.job_id, attempt: 1 });
  });

  it("races an ack against its deadline: the claim either counts or is back in the queue, never both", async () => {
    const stub = freshInbox();
    for (let round = 0; round < 6; round++) {
      const t0 = Date.now();
      const poll = leaseFrom(stub, t0, { waitMs: 20_000 });
      await sleep(20);
      const msg = await enqueueJob(stub, t0);
      const [claim] = await poll;
      const deadline = Date.parse(claim!.lease_expires_at) - claim!.lease_ms + ACK_WINDOW_MS;
      const ack = () => stub.ack({ runnerId: "rnr_a", jobId: msg.job_id, leaseId: claim!.lease_id, now: deadline - 1 });
      const sweep = () => stub.sweep({ now: deadline });
      const [acked] = round % 2 === 0 ? await Promise.all([ack(), sweep()]) : (await Promise.all([sweep(), ack()])).reverse();
      const view = await stub.get(msg.job_id);
      if ((acked as { ok: boolean }).ok) expect(view).toMatchObject({ status: "leased", attempt: 1, acknowledged: true });
      else expect(view).toMatchObject({ status: "queued", attempt: 0 });
      // leave the inbox empty for the next round
      if (view!.status === "queued") await leaseFrom(stub, deadline, { runnerId: "rnr_drain" });
    }
  });
});

describe("RunnerInbox: revoked runners", () => {
  it("ends a revoked runner's waiting poll at once and never claims for it again", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const started = Date.now();
    const poll = leaseFrom(stub, t0, { runnerId: "rnr_x", waitMs: 20_000 });
    await sleep(50);
    expect(await stub.revokeRunner({ runnerId: "rnr_x", now: t0 })).toMatchObject({ polls_ended: 1 });
    expect(await poll).toEqual([]);
    // well before the poll's own 20 s: it was ended, not timed out
    expect(Date.now() - started).toBeLessThan(15_000);

    const msg = await enqueueJob(stub, t0);
    expect(await leaseFrom(stub, t0, { runnerId: "rnr_x", waitMs: 300 })).toEqual([]);
    expect(await leaseFrom(stub, t0, { runnerId: "rnr_y" })).toMatchObject([{ job_id: msg.job_id, attempt: 1 }]);
  });

  it("hands back what a revoked runner held: a provisional claim without counting it, an acknowledged lease as a spent attempt", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const acknowledged = await enqueueJob(stub, t0);
    await leaseFrom(stub, t0, { runnerId: "rnr_x" });
    const poll = leaseFrom(stub, t0, { runnerId: "rnr_x", waitMs: 20_000 });
    await sleep(50);
    const provisional = await enqueueJob(stub, t0);
    expect(await poll).toMatchObject([{ job_id: provisional.job_id, ack_required: true }]);

    expect(await stub.revokeRunner({ runnerId: "rnr_x", now: t0 + 1 })).toEqual({ polls_ended: 0, released: 1, requeued: 1, dead: 0 });
    expect(await stub.get(provisional.job_id)).toMatchObject({ status: "queued", attempt: 0, leased_by: null });
    expect(await stub.get(acknowledged.job_id)).toMatchObject({ status: "queued", attempt: 1, leased_by: null });
    const events = await trail(acknowledged.job_id);
    expect(events.at(-1)).toMatchObject({ type: "job.requeued", reason: "runner_revoked" });
  });

  it("never leaves a job with a revoked runner when the revocation races a job's arrival at its waiting poll", async () => {
    for (let round = 0; round < 5; round++) {
      const stub = freshInbox();
      const t0 = Date.now();
      const poll = leaseFrom(stub, t0, { runnerId: "rnr_x", waitMs: 20_000 });
      await sleep(20);
      const revoke = stub.revokeRunner({ runnerId: "rnr_x", now: t0 });
      const arrival = enqueueJob(stub, t0);
      const [, msg] = await Promise.all([revoke, arrival]);
      await poll;
      expect(await stub.get(msg.job_id)).toMatchObject({ status: "queued", attempt: 0, leased_by: null });
    }
  });
});

describe("RunnerInbox: queue-time limit", () => {
  it("gives up a job nobody leases within its queue time as dead with no_runner, and tells its owner", async () => {
    await recordingOwnerCalls(async (calls) => {
      const stub = freshInbox();
      const t0 = Date.now();
      const msg = await enqueueJob(stub, t0, { payload: { runtime: "grok", prompt: "x", timeout_ms: 60_000 } }, 60_000);
      // a runner without grok never sees it
      expect(await leaseFrom(stub, t0 + 30_000, { runtimes: ["offline", "claude"] })).toEqual([]);
      expect(await stub.sweep({ now: t0 + 59_999 })).toMatchObject({ no_runner: 0 });
      expect(await stub.sweep({ now: t0 + 60_000 })).toMatchObject({ no_runner: 1 });
      expect(await stub.get(msg.job_id)).toMatchObject({ status: "dead", attempt: 0 });
      expect((await trail(msg.job_id)).map((e) => [e.type, e.reason])).toEqual([["job.dead", "no_runner"]]);
      const told = await eventually(async () => calls.find((c) => c.job_id === msg.job_id));
      expect(told).toMatchObject({ status: "dead", reason: "no_runner", error: { code: "no_runner" } });
    });
  });

  it("counts the queue time from submission: a job whose dispatch arrives after its limit is dead on arrival", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const message = await enqueueJob(stub, t0, { enqueued_at: new Date(t0 - 61_000).toISOString() }, 60_000);
    expect(await stub.get(message.job_id)).toMatchObject({ status: "dead" });
  });

  it("restarts the queue time when a job goes back to the queue after a lease", async () => {
    const stub = freshInbox();
    const t0 = Date.now();
    const msg = await enqueueJob(stub, t0, {}, 60_000);
    const [job] = await leaseFrom(stub, t0 + 50_000);
    await stub.fail({
      runnerId: "rnr_a",
      jobId: job!.job_id,
      leaseId: job!.lease_id,
      error: { code: "cli_error", message: "flaky" },
      retryable: true,
      now: t0 + 55_000,
    });
    // 70 s after submission but only 15 s after it re-entered the queue
    expect(await stub.sweep({ now: t0 + 70_000 })).toMatchObject({ no_runner: 0 });
    expect(await stub.sweep({ now: t0 + 115_000 })).toMatchObject({ no_runner: 1 });
    expect(await stub.get(msg.job_id)).toMatchObject({ status: "dead", attempt: 1 });
  });
});

describe("RunnerInbox: pruning finished jobs", () => {
  it("prunes only finished jobs older than the retention, never a queued or leased one, however old", async () => {
    const stub = freshInbox();
    const HOUR = 3_600_000;
    const t0 = Date.now() - 100 * HOUR;
    const done = await enqueueJob(stub, t0, {}, 1_000 * HOUR);
    const [d] = await leaseFrom(stub, t0);
    await stub.complete({ runnerId: "rnr_a", jobId: d!.job_id, leaseId: d!.lease_id, result: { text: "ok" }, now: t0 });
    const failed = await enqueueJob(stub, t0, {}, 1_000 * HOUR);
    const [f] = await leaseFrom(stub, t0);
    await stub.fail({
      runnerId: "rnr_a",
      jobId: f!.job_id,
      leaseId: f!.lease_id,
      error: { code: "cli_error", message: "x" },
      retryable: false,
      now: t0,
    });
    const leased = await enqueueJob(stub, t0, {}, 1_000 * HOUR);
    const [l] = await leaseFrom(stub, t0, { visibilityMs: 1_000 * HOUR });
    expect(l!.job_id).toBe(leased.job_id);
    const queued = await enqueueJob(stub, t0, { payload: { runtime: "codex", prompt: "x", timeout_ms: 60_000 } }, 1_000 * HOUR);
    const recent = await enqueueJob(stub, t0 + 99 * HOUR, {}, 1_000 * HOUR);
    const [r] = await leaseFrom(stub, t0 + 99 * HOUR);
    await stub.complete({ runnerId: "rnr_a", jobId: r!.job_id, leaseId: r!.lease_id, result: { text: "ok" }, now: t0 + 99 * HOUR });

    const now = t0 + 100 * HOUR;
    expect(await stub.sweep({ now, retainFinishedMs: 24 * HOUR })).toMatchObject({ pruned: 2 });
    expect(await stub.get(done.job_id)).toBeNull();
    expect(await stub.get(failed.job_id)).toBeNull();
    expect(await stub.get(leased.job_id)).toMatchObject({ status: "leased" });
    expect(await stub.get(queued.job_id)).toMatchObject({ status: "queued" });
    expect(await stub.get(recent.job_id)).toMatchObject({ status: "completed" });
    // the leased job is still the runner's to finish
    const finish = await stub.complete({ runnerId: "rnr_a", jobId: l!.job_id, leaseId: l!.lease_id, result: { text: "late" }, now });
    expect(finish).toMatchObject({ ok: true, status: "completed" });
    // D1 keeps the trail of a pruned job
    expect((await trail(done.job_id)).map((e) => e.type)).toEqual(["job.leased", "job.completed"]);
  });
});
