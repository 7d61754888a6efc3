import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getRunnerInbox } from "../../../src/durable-objects/runner-inbox-rpc";
import type { RunnerInbox } from "../../../src/workers/runner-inbox";
import type { DispatchMessage } from "../../../src/queues/dispatch-message";
import { randomHex } from "../../../src/lib/ids";

const VISIBILITY = 30_000;
const DAY = 86_400_000;
const ACK_WINDOW = 10_000;

function inbox() {
  return getRunnerInbox(env, `inbox-${crypto.randomUUID()}`);
}

function message(overrides: Partial<DispatchMessage> = {}): DispatchMessage {
  return {
    job_id: `job_${randomHex(8)}`,
    kind: "utility",
    payload: { runtime: "offline", prompt: "hello", timeout_ms: 60_000 },
    owner: { kind: "admin", id: "bootstrap-admin" },
    enqueued_at: new Date().toISOString(),
    ...overrides,
  } as DispatchMessage;
}

const lease = (
  stub: ReturnType<typeof inbox>,
  now: number,
  extra: Partial<{ capacity: number; runtimes: ("offline" | "claude")[]; runnerId: string }> = {},
) =>
  stub.lease({
    runnerId: extra.runnerId ?? "rnr_a",
    capacity: extra.capacity ?? 1,
    runtimes: extra.runtimes ?? ["offline"],
    waitMs: 0,
    visibilityMs: VISIBILITY,
    ackWindowMs: ACK_WINDOW,
    now,
  });

describe("RunnerInbox", () => {
  it("leases a queued job once, with attempt 1 and a lease expiry", async () => {
    const stub = inbox();
    const msg = message();
    const now = Date.now();
    expect(await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now })).toEqual({ accepted: true });
    const [job] = await lease(stub, now);
    expect(job).toMatchObject({ job_id: msg.job_id, kind: "utility", attempt: 1, payload: msg.payload });
    expect(Date.parse(job!.lease_expires_at)).toBe(now + VISIBILITY);
    expect(job!.lease_ms).toBe(VISIBILITY);
    expect(await lease(stub, now)).toEqual([]);
  });

  it("ignores a redelivered dispatch message for a job it already holds", async () => {
    const stub = inbox();
    const msg = message();
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now: Date.now() });
    expect(await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now: Date.now() })).toEqual({ accepted: false });
    expect(await lease(stub, Date.now(), { capacity: 5 })).toHaveLength(1);
  });

  it("hands out only jobs of the runtimes the runner has", async () => {
    const stub = inbox();
    const now = Date.now();
    await stub.enqueue({
      message: message({ payload: { runtime: "claude", prompt: "x", timeout_ms: 60_000 } }),
      maxAttempts: 3,
      maxQueueMs: DAY,
      now,
    });
    expect(await lease(stub, now, { runtimes: ["offline"] })).toEqual([]);
    expect(await lease(stub, now, { runtimes: ["offline", "claude"] })).toHaveLength(1);
  });

  it("hands out the oldest queued jobs first across every runtime asked for, the job id breaking a tie", async () => {
    const stub = inbox();
    const now = Date.now();
    const at = (ms: number) => new Date(now - 60_000 + ms).toISOString();
    const job = (id: string, runtime: "offline" | "claude", ms: number) =>
      message({ job_id: `job_00000000000000${id}`, enqueued_at: at(ms), payload: { runtime, prompt: id, timeout_ms: 60_000 } });
    // Enqueued out of order, two runtimes, a tie at +0 across them.
    const jobs = [
      job("0a", "offline", 10),
      job("0c", "offline", 0),
      job("0d", "claude", 20),
      job("0b", "claude", 0),
      job("0e", "offline", 5),
    ];
    await stub.enqueueMany({ messages: jobs, maxAttempts: 3, maxQueueMs: DAY, now });
    const first = await lease(stub, now, { capacity: 3, runtimes: ["claude", "offline", "claude"] });
    expect(first.map((j) => j.job_id.slice(-2))).toEqual(["0b", "0c", "0e"]);
    expect((await lease(stub, now, { capacity: 5, runtimes: ["offline", "claude"] })).map((j) => j.job_id.slice(-2))).toEqual(["0a", "0d"]);
  });

  it("takes a batch in one go: each new job once, a held or repeated id ignored, payload and owner stored as sent", async () => {
    const stub = inbox();
    const now = Date.now();
    const known = message();
    await stub.enqueue({ message: known, maxAttempts: 3, maxQueueMs: DAY, now });
    // Text that JSON escapes (quotes, a backslash, a newline, non-ASCII, an emoji) must come back byte for byte.
    const odd = message({
      payload: { runtime: "offline", prompt: 'say "hi"\\n\nnaïve 日本 🚀', timeout_ms: 60_000 },
      owner: { kind: "admin", id: 'ops "lead"' },
      enqueued_at: new Date(now - 5_000).toISOString(),
    });
    const later = message({ enqueued_at: new Date(now + 60_000).toISOString() });
    const fresh = message();
    const answer = await stub.enqueueMany({ messages: [known, odd, later, odd, fresh], maxAttempts: 4, maxQueueMs: DAY, now });
    expect(answer).toEqual({ accepted: [odd.job_id, later.job_id, fresh.job_id] });

    const rows = await runInDurableObject(stub, (_i: RunnerInbox, state) =>
      state.storage.sql
        .exec<{
          job_id: string;
          payload: string;
          owner: string;
          status: string;
          max_attempts: number;
          enqueued_at: number;
          queue_deadline: number;
          updated_at: number;
        }>(
          `SELECT job_id, payload, owner, status, max_attempts, enqueued_at, queue_deadline, updated_at FROM jobs WHERE job_id IN (?, ?)`,
          odd.job_id,
          later.job_id,
        )
        .toArray(),
    );
    const byId = new Map(rows.map((r) => [r.job_id, r]));
    expect(byId.get(odd.job_id)).toEqual({
      job_id: odd.job_id,
      payload: JSON.stringify(odd.payload),
      owner: JSON.stringify(odd.owner),
      status: "queued",
      max_attempts: 4,
      enqueued_at: now - 5_000,
      queue_deadline: now - 5_000 + DAY,
      updated_at: now,
    });
    // A submission stamped after its arrival queues from its arrival.
    expect(byId.get(later.job_id)).toMatchObject({ enqueued_at: now, queue_deadline: now + DAY });
    const leased = await lease(stub, now, { capacity: 10 });
    expect(leased.map((j) => j.job_id).sort()).toEqual([known.job_id, odd.job_id, later.job_id, fresh.job_id].sort());
    expect(leased.find((j) => j.job_id === odd.job_id)!.payload).toEqual(odd.payload);
  });

  it("extends a current lease and refuses a stale one", async () => {
    const stub = inbox();
    const now = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now });
    const [job] = await lease(stub, now);
    const extended = await stub.extend({
      runnerId: "rnr_a",
      jobId: job!.job_id,
      leaseId: job!.lease_id,
      extendMs: 90_000,
      now: now + 10_000,
    });
    expect(extended).toEqual({ ok: true, lease_expires_at: new Date(now + 100_000).toISOString() });
    // past the original expiry but inside the extension: still leased
    expect(await lease(stub, now + VISIBILITY + 1_000)).toEqual([]);
    expect(await stub.extend({ runnerId: "rnr_a", jobId: job!.job_id, leaseId: "lease_bogus", extendMs: 90_000, now })).toEqual({
      ok: false,
      reason: "stale_lease",
      status: "leased",
    });
    expect(await stub.extend({ runnerId: "rnr_a", jobId: "job_0000000000000000", leaseId: job!.lease_id, extendMs: 90_000, now })).toEqual({
      ok: false,
      reason: "not_found",
    });
  });

  it("enforces a deadline that a later write brought forward at the next ordinary call, without the alarm or the tick", async () => {
    // The inbox skips its lazy checks until its earliest known deadline: every write that sets an
    // earlier one must move that bound, or the next call would miss it.
    const stub = inbox();
    const t0 = Date.now();
    const long = message();
    await stub.enqueue({ message: long, maxAttempts: 3, maxQueueMs: DAY, now: t0 });
    const [held] = await lease(stub, t0);
    // an extension that shortens the lease to 2 s
    await stub.extend({ runnerId: "rnr_a", jobId: held!.job_id, leaseId: held!.lease_id, extendMs: 2_000, now: t0 });
    const [again] = await lease(stub, t0 + 2_000, { runnerId: "rnr_b" });
    expect(again).toMatchObject({ job_id: long.job_id, attempt: 2 });

    // a job queued later with a queue-time limit shorter than everything else the inbox holds
    const brief = message({ payload: { runtime: "claude", prompt: "x", timeout_ms: 60_000 } });
    await stub.enqueue({ message: brief, maxAttempts: 3, maxQueueMs: 5_000, now: t0 + 2_000 });
    await stub.ack({ runnerId: "rnr_b", jobId: long.job_id, leaseId: again!.lease_id, now: t0 + 7_000 });
    expect(await stub.get(brief.job_id)).toMatchObject({ status: "dead" });

    // a retryable failure puts the job back with a fresh queue-time limit of its own
    const retried = message();
    await stub.enqueue({ message: retried, maxAttempts: 3, maxQueueMs: 10_000, now: t0 + 7_000 });
    const [third] = await lease(stub, t0 + 7_000, { runnerId: "rnr_c" });
    expect(third?.job_id).toBe(retried.job_id);
    await stub.fail({
      runnerId: "rnr_c",
      jobId: retried.job_id,
      leaseId: third!.lease_id,
      error: { code: "cli_failed", message: "exit 1" },
      retryable: true,
      now: t0 + 8_000,
    });
    await stub.ack({ runnerId: "rnr_b", jobId: long.job_id, leaseId: again!.lease_id, now: t0 + 18_000 });
    expect(await stub.get(retried.job_id)).toMatchObject({ status: "dead" });
  });

  it("re-leases a lapsed job with attempt+1 and refuses the old holder afterwards", async () => {
    const stub = inbox();
    const t0 = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now: t0 });
    const [first] = await lease(stub, t0, { runnerId: "rnr_a" });
    const [second] = await lease(stub, t0 + VISIBILITY, { runnerId: "rnr_b" });
    expect(second).toMatchObject({ job_id: first!.job_id, attempt: 2 });
    expect(second!.lease_id).not.toBe(first!.lease_id);
    const stale = await stub.complete({
      runnerId: "rnr_a",
      jobId: first!.job_id,
      leaseId: first!.lease_id,
      result: { text: "late" },
      now: t0 + VISIBILITY + 1,
    });
    expect(stale).toEqual({ ok: false, reason: "stale_lease", status: "leased" });
  });

  it("still accepts the lapsed holder's completion when nobody re-leased the job", async () => {
    const stub = inbox();
    const t0 = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now: t0 });
    const [job] = await lease(stub, t0);
    const done = await stub.complete({
      runnerId: "rnr_a",
      jobId: job!.job_id,
      leaseId: job!.lease_id,
      result: { text: "ok" },
      now: t0 + VISIBILITY + 5,
    });
    expect(done).toEqual({ ok: true, duplicate: false, status: "completed" });
  });

  it("declares a job dead after its third lease lapses, with the reason", async () => {
    const stub = inbox();
    let t = Date.now();
    const msg = message();
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now: t });
    for (const attempt of [1, 2, 3]) {
      const [job] = await lease(stub, t);
      expect(job?.attempt).toBe(attempt);
      t += VISIBILITY;
    }
    expect(await stub.sweep({ now: t })).toMatchObject({ dead: 1, requeued: 0 });
    expect(await lease(stub, t)).toEqual([]);
    expect(await stub.get(msg.job_id)).toMatchObject({ status: "dead", attempt: 3 });
  });

  it("treats a repeated completion as a no-op and a different lease's completion as stale", async () => {
    const stub = inbox();
    const now = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now });
    const [job] = await lease(stub, now);
    const args = { runnerId: "rnr_a", jobId: job!.job_id, leaseId: job!.lease_id, result: { text: "FAKE_OK" }, now };
    expect(await stub.complete(args)).toEqual({ ok: true, duplicate: false, status: "completed" });
    expect(await stub.complete(args)).toEqual({ ok: true, duplicate: true, status: "completed" });
    expect(await stub.complete({ ...args, leaseId: "lease_other" })).toMatchObject({ ok: false, reason: "stale_lease" });
    expect(await stub.fail({ ...args, error: { code: "cli_error", message: "late" }, retryable: false })).toMatchObject({
      ok: false,
      reason: "stale_lease",
    });
  });

  it("applies exactly one of 10 concurrent identical completions of the same lease; the rest are duplicates", async () => {
    const stub = inbox();
    const now = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now });
    const [job] = await lease(stub, now);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () =>
        stub.complete({ runnerId: "rnr_a", jobId: job!.job_id, leaseId: job!.lease_id, result: { text: "same" }, now }),
      ),
    );
    expect(outcomes.filter((o) => o.ok && !o.duplicate)).toHaveLength(1);
    expect(outcomes.filter((o) => o.ok && o.duplicate)).toHaveLength(9);
  });

  it("keeps exactly one of 10 racing completions with different results; the other nine are result conflicts", async () => {
    const stub = inbox();
    const now = Date.now();
    const msg = message();
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now });
    const [job] = await lease(stub, now);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        stub.complete({ runnerId: "rnr_a", jobId: job!.job_id, leaseId: job!.lease_id, result: { text: `r${i}` }, now }),
      ),
    );
    expect(outcomes.filter((o) => o.ok && !o.duplicate)).toHaveLength(1);
    expect(outcomes.filter((o) => !o.ok && o.reason === "result_conflict")).toHaveLength(9);
  });

  it("lets only one of a racing completion and re-lease win after the lease lapsed", async () => {
    const stub = inbox();
    const t0 = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now: t0 });
    const [job] = await lease(stub, t0, { runnerId: "rnr_a" });
    const later = t0 + VISIBILITY + 1;
    const [completion, releases] = await Promise.all([
      stub.complete({ runnerId: "rnr_a", jobId: job!.job_id, leaseId: job!.lease_id, result: { text: "late but done" }, now: later }),
      lease(stub, later, { runnerId: "rnr_b" }),
    ]);
    // either the lapsed holder finished it (and nobody re-leased it) or it was re-leased (and the completion is stale)
    if (completion.ok) expect(releases).toEqual([]);
    else expect(releases.map((j) => j.attempt)).toEqual([2]);
  });

  it("re-queues a retryable failure, fails a non-retryable one, and kills a retryable one on the last attempt", async () => {
    const stub = inbox();
    const now = Date.now();
    await stub.enqueue({ message: message(), maxAttempts: 2, maxQueueMs: DAY, now });
    const [a1] = await lease(stub, now);
    const err = { code: "timeout", message: "no result after 1.5 s" };
    expect(
      await stub.fail({ runnerId: "rnr_a", jobId: a1!.job_id, leaseId: a1!.lease_id, error: err, retryable: true, now }),
    ).toMatchObject({
      ok: true,
      status: "queued",
    });
    // the same failure again is a no-op, not a second retry
    expect(
      await stub.fail({ runnerId: "rnr_a", jobId: a1!.job_id, leaseId: a1!.lease_id, error: err, retryable: true, now }),
    ).toMatchObject({
      ok: true,
      duplicate: true,
    });
    const [a2] = await lease(stub, now);
    expect(a2?.attempt).toBe(2);
    expect(
      await stub.fail({ runnerId: "rnr_a", jobId: a2!.job_id, leaseId: a2!.lease_id, error: err, retryable: true, now }),
    ).toMatchObject({
      ok: true,
      status: "dead",
    });

    await stub.enqueue({ message: message(), maxAttempts: 3, maxQueueMs: DAY, now });
    const [b1] = await lease(stub, now);
    const fatal = { code: "not_logged_in", message: "Not logged in" };
    expect(
      await stub.fail({ runnerId: "rnr_a", jobId: b1!.job_id, leaseId: b1!.lease_id, error: fatal, retryable: false, now }),
    ).toMatchObject({
      ok: true,
      status: "failed",
    });
    expect(await lease(stub, now)).toEqual([]);
  });

  it("wakes a waiting long-poll when a job arrives", async () => {
    const stub = inbox();
    const now = Date.now();
    const waiting = stub.lease({
      runnerId: "rnr_a",
      capacity: 1,
      runtimes: ["offline"],
      waitMs: 20_000,
      visibilityMs: VISIBILITY,
      ackWindowMs: ACK_WINDOW,
      now,
    });
    await new Promise((r) => setTimeout(r, 50));
    const msg = message();
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now });
    const started = Date.now();
    const jobs = await waiting;
    expect(jobs.map((j) => j.job_id)).toEqual([msg.job_id]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("gives back what an abandoned poll claimed, without counting the attempt, and leaves other polls' jobs alone", async () => {
    const stub = inbox();
    const now = Date.now();
    const kept = message();
    const stranded = message();
    await stub.enqueue({ message: kept, maxAttempts: 3, maxQueueMs: DAY, now });
    const [mine] = await stub.lease({
      runnerId: "rnr_a",
      capacity: 1,
      runtimes: ["offline"],
      waitMs: 0,
      visibilityMs: VISIBILITY,
      ackWindowMs: ACK_WINDOW,
      pollId: "poll-kept",
      now,
    });
    await stub.enqueue({ message: stranded, maxAttempts: 3, maxQueueMs: DAY, now });
    await stub.lease({
      runnerId: "rnr_a",
      capacity: 1,
      runtimes: ["offline"],
      waitMs: 0,
      visibilityMs: VISIBILITY,
      ackWindowMs: ACK_WINDOW,
      pollId: "poll-gone",
      now,
    });

    // another runner cannot cancel rnr_a's poll
    expect(await stub.cancelPoll({ pollId: "poll-gone", runnerId: "rnr_b", now })).toEqual({ released: 0 });
    expect(await stub.cancelPoll({ pollId: "poll-gone", runnerId: "rnr_a", now })).toEqual({ released: 1 });
    expect(await stub.get(stranded.job_id)).toMatchObject({ status: "queued", attempt: 0 });
    expect(await stub.get(mine!.job_id)).toMatchObject({ status: "leased", attempt: 1 });
    const [again] = await lease(stub, now, { runnerId: "rnr_b" });
    expect(again).toMatchObject({ job_id: stranded.job_id, attempt: 1 });
  });

  it("ends a cancelled long-poll empty-handed even when work arrives", async () => {
    const stub = inbox();
    const now = Date.now();
    const waiting = stub.lease({
      runnerId: "rnr_a",
      capacity: 1,
      runtimes: ["offline"],
      waitMs: 20_000,
      visibilityMs: VISIBILITY,
      ackWindowMs: ACK_WINDOW,
      pollId: "poll-bye",
      now,
    });
    await new Promise((r) => setTimeout(r, 50));
    await stub.cancelPoll({ pollId: "poll-bye", runnerId: "rnr_a", now });
    const msg = message();
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now });
    expect(await waiting).toEqual([]);
    expect(await stub.get(msg.job_id)).toMatchObject({ status: "queued" });
  });

  it("returns an empty list when a long-poll times out with no work", async () => {
    const stub = inbox();
    expect(
      await stub.lease({
        runnerId: "rnr_a",
        capacity: 1,
        runtimes: ["offline"],
        waitMs: 200,
        visibilityMs: VISIBILITY,
        ackWindowMs: ACK_WINDOW,
        now: Date.now(),
      }),
    ).toEqual([]);
  });

  it("lapses leases from its alarm, without any caller", async () => {
    const stub = inbox();
    const msg = message();
    // lease in the past so the lease is already due when the alarm runs
    const past = Date.now() - 2 * VISIBILITY;
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now: past });
    await lease(stub, past);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.get(msg.job_id)).toMatchObject({ status: "queued", attempt: 1 });
  });

  it("validates RPC input: a malformed lease request is refused", async () => {
    const stub = inbox();
    // called in the object's own context: a rejection crossing RPC is also reported as unhandled
    const outcome = await runInDurableObject(stub, (instance: RunnerInbox) =>
      instance
        .lease({ runnerId: "", capacity: 0, runtimes: [], waitMs: 0, visibilityMs: VISIBILITY, ackWindowMs: ACK_WINDOW, now: Date.now() })
        .then(
          () => "accepted",
          (err: Error) => err.name,
        ),
    );
    expect(outcome).toBe("ZodError");
  });

  it("withdraws an owner's queued jobs as dead with its error, leaving leased jobs and other owners' jobs alone", async () => {
    const stub = inbox();
    const now = Date.now();
    const mine = { kind: "admin", id: "round-a" } as const;
    const at = (ms: number) => new Date(now - ms).toISOString(); // queue order: held first
    const [held, waiting, other] = [
      message({ owner: mine, enqueued_at: at(3_000) }),
      message({ owner: mine, enqueued_at: at(2_000) }),
      message({ owner: { kind: "admin", id: "round-b" }, enqueued_at: at(1_000) }),
    ];
    for (const msg of [held, waiting, other]) await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now });
    const [leased] = await lease(stub, now);
    expect(leased!.job_id).toBe(held.job_id);

    const error = { code: "round_ended", message: "the round ended" };
    expect(await stub.withdraw({ owner: mine, error, now })).toEqual({ withdrawn: [waiting.job_id] });
    expect(await stub.get(waiting.job_id)).toMatchObject({ status: "dead" });
    expect(await stub.get(held.job_id)).toMatchObject({ status: "leased" });
    expect(await stub.get(other.job_id)).toMatchObject({ status: "queued" });
    expect(await stub.withdraw({ owner: mine, error, now })).toEqual({ withdrawn: [] });
    // The holder of the leased job still finishes it (its own check is what stops a member).
    const done = await stub.complete({ runnerId: "rnr_a", jobId: held.job_id, leaseId: leased!.lease_id, result: { text: "ok" }, now });
    expect(done).toMatchObject({ ok: true, status: "completed" });
  });

  it("hands each job of a withdrawn owner to exactly one of racing polls and the withdrawal, never both", async () => {
    const stub = inbox();
    const now = Date.now();
    const owner = { kind: "admin", id: "round-race" } as const;
    const ids = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const msg = message({ owner });
      ids.add(msg.job_id);
      await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now });
    }
    const [a, withdrawal, b, c] = await Promise.all([
      lease(stub, now, { runnerId: "rnr_a", capacity: 4 }),
      stub.withdraw({ owner, error: { code: "round_ended", message: "the round ended" }, now }),
      lease(stub, now, { runnerId: "rnr_b", capacity: 4 }),
      lease(stub, now, { runnerId: "rnr_c", capacity: 4 }),
    ]);
    const leased = [...a, ...b, ...c].map((j) => j.job_id);
    expect(new Set([...leased, ...withdrawal.withdrawn]).size).toBe(10);
    expect(leased.length + withdrawal.withdrawn.length).toBe(10);
    for (const id of withdrawal.withdrawn) expect(await stub.get(id)).toMatchObject({ status: "dead" });
    for (const id of leased) expect(await stub.get(id)).toMatchObject({ status: "leased" });
  });

  it("calls the owner's handler once the job has ended and its notice reached D1, then forgets the call", async () => {
    const stub = inbox();
    const msg = message();
    const now = Date.now();
    await stub.enqueue({ message: msg, maxAttempts: 3, maxQueueMs: DAY, now });
    const [job] = await lease(stub, now);
    const pendingCalls = () =>
      runInDurableObject(stub, (_i: RunnerInbox, state) => state.storage.sql.exec(`SELECT COUNT(*) AS n FROM owner_calls`).one().n);
    expect(await pendingCalls()).toBe(0);
    await stub.complete({ runnerId: "rnr_a", jobId: msg.job_id, leaseId: job!.lease_id, result: { text: "ok" }, now });
    expect(await pendingCalls()).toBe(0);
    const row = await env.DB.prepare(`SELECT COUNT(*) AS n FROM events WHERE type = 'job.owner_unhandled' AND subject = ?`)
      .bind(msg.job_id)
      .first();
    expect(row).toEqual({ n: 0 });
  });
});
