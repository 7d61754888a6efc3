import { DurableObject } from "cloudflare:workers";
import * as z from "zod";
import type { JobStatus } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { newId } from "../lib/ids";
import { canonicalJson } from "../jobs/canonical";
import { afterFailure, afterLeaseExpired, checkFinish } from "../jobs/lease-policy";
import type { JobEnd } from "../jobs/job-end";
import type { AttemptRecord } from "../jobs/outcomes";
import type { JobError } from "../jobs/payloads";
import type { DispatchMessage } from "../queues/dispatch-message";
import {
  ackInput,
  enqueueManyInput,
  cancelPollInput,
  completeInput,
  enqueueInput,
  extendInput,
  failInput,
  leaseInput,
  revokeInput,
  sweepInput,
  syncHoldsInput,
  withdrawEmployeeInput,
  withdrawInput,
  type AckInput,
  type EnqueueManyInput,
  type CancelPollInput,
  type CompleteInput,
  type EnqueueInput,
  type ExtendInput,
  type FailInput,
  type WithdrawInput,
  type FinishOutcome,
  type InboxJobView,
  type LeasedJob,
  type LeaseInput,
  type LeaseRefOutcome,
  type Maintenance,
  type RevokeInput,
  type RunnerActivity,
  type SweepInput,
  type SyncHoldsInput,
  type WithdrawEmployeeInput,
} from "./runner-inbox-rpc";
import { DeadlineBound } from "./runner-inbox-deadlines";
import { InboxOutbox } from "./runner-inbox-outbox";
import { migrateInbox, type JobRow } from "./runner-inbox-schema";

export type * from "./runner-inbox-rpc";

interface Waiter {
  runnerId: string;
  wake: () => void;
}

/**
 * The fleet's lease queue. Every state change is a synchronous `ctx.storage.sql` block with no
 * `await` inside, so under the input gate it is atomic: two runners can never lease one job.
 * Changes are mirrored to D1 (the `jobs` row, attempt history and the events feed) through an
 * outbox, delivered after the change and retried by the alarm, so a D1 hiccup delays the trail but
 * never loses it. Deliveries may repeat; D1 applies each job's notices in seq order regardless.
 * Time-based rules (lease expiry, unacknowledged claims, queue-time limit) are checked lazily on
 * every call, and the single alarm is set no later than the earliest of them.
 *
 * It knows no feature: a job's owner is told that the job ended through `callOwner`, which the
 * Worker's exported subclass (`src/workers/runner-inbox.ts`) implements with the owner-handler
 * table, the way Cloudflare's `agents` SDK has the app subclass its base object.
 */
export abstract class RunnerInboxBase extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly waiters = new Set<Waiter>();
  /**
   * Long-polls their runner gave up on (poll id → when), so they stop waiting and claim nothing. Kept
   * for a minute rather than consumed by the first call that sees it: a lease fanned out over the
   * runtime pools makes several calls under one poll id, and a later one must not wait for a dead runner.
   */
  private readonly cancelledPolls = new Map<string, number>();
  /** Runner tokens revoked by an admin (persisted in `revoked_runners`): their polls claim nothing. */
  private readonly revoked = new Set<string>();
  /** The latest test-clock offset a caller gave us; maps clock-time deadlines onto real alarms. */
  private offsetMs = 0;
  /** The alarm as we last set it (real ms, null for none); undefined until we know. */
  private alarmAt: number | null | undefined = undefined;
  /** Notices to D1 and calls to owners: `runner-inbox-outbox.ts`. */
  private readonly outbox: InboxOutbox;
  /** When the lazy checks may next find something due: `runner-inbox-deadlines.ts`. */
  private readonly deadlines: DeadlineBound;
  /** The hold keys in force (`holds`), mirrored in memory: with none, a lease pays nothing for them. */
  private readonly holds = new Set<string>();
  /** When each runner's last poll was written (clock ms): `last_poll_at` is kept to the second. */
  private readonly pollWritten = new Map<string, number>();

  /** Tells the job's owner that it ended; throwing asks for a retry (see `InboxOutbox`). */
  protected abstract callOwner(end: JobEnd): Promise<void>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrateInbox(ctx.storage);
    this.deadlines = new DeadlineBound(this.sql);
    this.outbox = new InboxOutbox(
      this.sql,
      env,
      ctx.id.toString(),
      (end) => this.callOwner(end),
      () => this.offsetMs,
    );
    for (const row of this.sql.exec<{ runner_id: string }>(`SELECT runner_id FROM revoked_runners`)) this.revoked.add(row.runner_id);
    for (const row of this.sql.exec<{ hold_key: string }>(`SELECT hold_key FROM holds`)) this.holds.add(row.hold_key);
  }

  async enqueue(input: EnqueueInput): Promise<{ accepted: boolean }> {
    const req = enqueueInput.parse(input);
    this.observe(req.now);
    const accepted = this.insertQueued([req.message], req.maxAttempts, req.maxQueueMs, req.now).size > 0;
    // A job that already waited out its queue time before it got here is given up at once.
    this.maintain(req.now);
    if (accepted) this.wakeWaiters();
    await this.settle();
    return { accepted };
  }

  /** Which of these jobs the inbox holds (in any status); the reconciler re-dispatches the rest. */
  async heldJobs(input: { jobIds: string[] }): Promise<string[]> {
    const { jobIds } = z.object({ jobIds: z.array(z.string().min(1).max(64)).max(1_000) }).parse(input);
    if (jobIds.length === 0) return [];
    return this.sql
      .exec<{ job_id: string }>(`SELECT job_id FROM jobs WHERE job_id IN (SELECT value FROM json_each(?))`, JSON.stringify(jobIds))
      .toArray()
      .map((r) => r.job_id);
  }

  /** Takes in a batch of jobs (the dispatch consumer, the reconciler); a job already held is ignored. */
  async enqueueMany(input: EnqueueManyInput): Promise<{ accepted: string[] }> {
    const req = enqueueManyInput.parse(input);
    this.observe(req.now);
    const inserted = this.insertQueued(req.messages, req.maxAttempts, req.maxQueueMs, req.now);
    // An id the batch repeats is accepted once (`delete` answers true for its first occurrence only).
    const accepted = req.messages.map((m) => m.job_id).filter((id) => inserted.delete(id));
    this.maintain(req.now);
    if (accepted.length > 0) this.wakeWaiters();
    await this.settle();
    return { accepted };
  }

  /**
   * Long-poll: claims up to `capacity` jobs, waiting up to `waitMs` (real time, not the test
   * clock: it bounds an HTTP request) for work to arrive. A claim made after waiting is
   * provisional: the runner may have died while its poll waited (DESIGN: leases), so it must be
   * acknowledged within `ackWindowMs` or it returns to the queue without counting the attempt.
   */
  async lease(input: LeaseInput): Promise<LeasedJob[]> {
    const req = leaseInput.parse(input);
    const deadline = Date.now() + req.waitMs;
    this.observe(req.now);
    this.notePoll(req.runnerId, req.now);
    let claimed: LeasedJob[] = [];
    // The caller's `now` holds until we wait; after a wait the clock has moved on by real time.
    let now = req.now;
    let waited = false;
    for (;;) {
      if (req.pollId && this.cancelledPolls.has(req.pollId)) break;
      if (this.revoked.has(req.runnerId)) break;
      this.maintain(now);
      claimed = this.claim(req, now, waited);
      if (claimed.length > 0 || Date.now() >= deadline) break;
      await this.waitForWork(req.runnerId, deadline - Date.now());
      waited = true;
      now = Date.now() + this.offsetMs;
    }
    await this.settle();
    return claimed;
  }

  /** The runner received a provisional claim and is alive: the claim now counts. */
  async ack(input: AckInput): Promise<LeaseRefOutcome> {
    const req = ackInput.parse(input);
    this.observe(req.now);
    this.maintain(req.now);
    const job = this.findRow(req.jobId);
    let outcome: LeaseRefOutcome;
    if (!job) outcome = { ok: false, reason: "not_found" };
    else if (!this.holdsLease(job, req.leaseId, req.runnerId))
      outcome = { ok: false, reason: "stale_lease", status: publicStatus(job.status) };
    else {
      this.sql.exec(`UPDATE jobs SET acked = 1, ack_deadline = NULL, updated_at = ? WHERE job_id = ?`, req.now, req.jobId);
      outcome = { ok: true, lease_expires_at: new Date(job.lease_expires_at!).toISOString() };
    }
    await this.settle();
    return outcome;
  }

  /**
   * A runner shutting down abandons its in-flight long-poll; whatever that poll claimed never
   * reached it. Those jobs go straight back to the queue without counting the attempt, instead of
   * sitting out a lease; a poll still waiting returns empty.
   */
  async cancelPoll(input: CancelPollInput): Promise<{ released: number }> {
    const req = cancelPollInput.parse(input);
    this.observe(req.now);
    this.cancelledPolls.set(req.pollId, Date.now());
    for (const [id, at] of this.cancelledPolls) if (Date.now() - at > CANCELLED_POLL_MEMORY_MS) this.cancelledPolls.delete(id);
    const stranded = this.sql
      .exec<JobRow>(`SELECT * FROM jobs WHERE poll_id = ? AND leased_by = ? AND status = 'leased'`, req.pollId, req.runnerId)
      .toArray();
    for (const job of stranded) this.release(job, req.now, "lease_undelivered");
    this.wakeWaiters();
    await this.settle();
    return { released: stranded.length };
  }

  /** Extends a lease; the first extend also acknowledges a provisional claim. */
  async extend(input: ExtendInput): Promise<LeaseRefOutcome> {
    const req = extendInput.parse(input);
    this.observe(req.now);
    this.maintain(req.now);
    const job = this.findRow(req.jobId);
    let outcome: LeaseRefOutcome;
    if (!job) outcome = { ok: false, reason: "not_found" };
    else if (!this.holdsLease(job, req.leaseId, req.runnerId))
      outcome = { ok: false, reason: "stale_lease", status: publicStatus(job.status) };
    else {
      const expiresAt = req.now + req.extendMs;
      this.deadlines.lower(expiresAt);
      this.sql.exec(
        `UPDATE jobs SET lease_expires_at = ?, acked = 1, ack_deadline = NULL, updated_at = ? WHERE job_id = ?`,
        expiresAt,
        req.now,
        req.jobId,
      );
      outcome = { ok: true, lease_expires_at: new Date(expiresAt).toISOString() };
    }
    await this.settle();
    return outcome;
  }

  async complete(input: CompleteInput): Promise<FinishOutcome> {
    const req = completeInput.parse(input);
    const now = req.now;
    this.observe(now);
    this.maintain(now);
    const result = canonicalJson(req.result);
    // The usual case, the holder finishing under its lease (what `checkFinish` calls "ok": its lease,
    // leased or lapsed but not re-leased), is the update itself; anything else reads the row to say why not.
    const revoked = this.revoked.has(req.runnerId);
    const row = revoked
      ? undefined
      : this.sql
          .exec<JobRow>(
            `UPDATE jobs SET status = 'completed', result = ?, error = NULL, lease_expires_at = NULL, acked = 1, ack_deadline = NULL,
               queue_deadline = NULL, finished_at = ?, updated_at = ?
             WHERE job_id = ? AND lease_id = ? AND leased_by = ? AND status IN ('leased', 'queued') RETURNING *`,
            result,
            now,
            now,
            req.jobId,
            req.leaseId,
            req.runnerId,
          )
          .toArray()[0];
    if (!row) {
      const job = this.findRow(req.jobId);
      if (!job) return this.settled({ ok: false, reason: "not_found" });
      // The same completion again is a no-op; a different result under the same lease is a conflict.
      if (!revoked && checkFinish(holder(job), req.leaseId, req.runnerId, "completed") === "duplicate")
        return this.settled(
          job.result === result
            ? { ok: true, duplicate: true, status: publicStatus(job.status) }
            : { ok: false, reason: "result_conflict", status: publicStatus(job.status) },
        );
      return this.settled({ ok: false, reason: "stale_lease", status: publicStatus(job.status) });
    }
    this.outbox.record(row, {
      type: "job.completed",
      status: "completed",
      at: now,
      result: req.result,
      attempt_record: attemptRecord(row, "completed", now),
    });
    return this.settled({ ok: true, duplicate: false, status: "completed" });
  }

  async fail(input: FailInput): Promise<FinishOutcome> {
    const req = failInput.parse(input);
    const now = req.now;
    this.observe(now);
    this.maintain(now);
    const job = this.findRow(req.jobId);
    if (!job) return this.settled({ ok: false, reason: "not_found" });
    const decision = afterFailure(job.attempt, job.max_attempts, req.retryable);
    // A retried failure leaves the job queued again; repeating it under the same lease is a no-op.
    const alreadyApplied = job.status !== "leased" && job.error !== null && job.lease_id === req.leaseId && job.leased_by === req.runnerId;
    const check = this.revoked.has(req.runnerId)
      ? "stale"
      : alreadyApplied
        ? "duplicate"
        : checkFinish(holder(job), req.leaseId, req.runnerId, decision.status);
    if (check === "stale") return this.settled({ ok: false, reason: "stale_lease", status: publicStatus(job.status) });
    if (check === "duplicate") return this.settled({ ok: true, duplicate: true, status: publicStatus(job.status) });
    const terminal = decision.status !== "queued";
    const row = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = ?, error = ?, lease_expires_at = NULL, acked = 1, ack_deadline = NULL,
           queue_deadline = CASE WHEN ? THEN NULL ELSE ? + max_queue_ms END, finished_at = ?, updated_at = ? WHERE job_id = ? RETURNING *`,
        decision.status,
        JSON.stringify(req.error),
        terminal ? 1 : 0,
        now,
        terminal ? now : null,
        now,
        req.jobId,
      )
      .one();
    this.deadlines.noteRow(row);
    const type = decision.status === "queued" ? "job.requeued" : decision.status === "dead" ? "job.dead" : "job.failed";
    this.outbox.record(row, {
      type,
      status: decision.status,
      at: now,
      error: req.error,
      reason: decision.reason,
      attempt_record: attemptRecord(row, "failed", now, req.error),
    });
    if (decision.status === "queued") this.wakeWaiters();
    return this.settled({ ok: true, duplicate: false, status: decision.status });
  }

  /**
   * An admin revoked this runner's token. Its waiting polls end empty-handed and it claims nothing
   * more; what it held goes back to the queue now rather than after a lease it can no longer
   * extend (a provisional claim without counting the attempt, an acknowledged one as if it lapsed).
   */
  async revokeRunner(input: RevokeInput): Promise<{ polls_ended: number; released: number; requeued: number; dead: number }> {
    const req = revokeInput.parse(input);
    this.observe(req.now);
    this.sql.exec(`INSERT INTO revoked_runners (runner_id, revoked_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, req.runnerId, req.now);
    this.revoked.add(req.runnerId);
    let pollsEnded = 0;
    for (const waiter of this.waiters) {
      if (waiter.runnerId !== req.runnerId) continue;
      this.waiters.delete(waiter);
      waiter.wake();
      pollsEnded++;
    }
    const held = this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE leased_by = ? AND status = 'leased'`, req.runnerId).toArray();
    const counts = { polls_ended: pollsEnded, released: 0, requeued: 0, dead: 0 };
    for (const job of held) {
      if (job.acked === 0) {
        this.release(job, req.now, "runner_revoked");
        counts.released++;
      } else if (this.lapse(job, req.now, "runner_revoked") === "dead") counts.dead++;
      else counts.requeued++;
    }
    if (held.length > 0) this.wakeWaiters();
    await this.settle();
    return counts;
  }

  /**
   * The owner no longer wants its jobs that no runner has taken yet (a team round that ended): they
   * are `dead` with the owner's error now, instead of being leased, set up and refused by the
   * runner's own check. Leased jobs stay with their holder, whose check stops them; a job still in the
   * dispatch queue arrives later and is refused when leased, as before. Repeating it is harmless.
   */
  async withdraw(input: WithdrawInput): Promise<{ withdrawn: string[] }> {
    const req = withdrawInput.parse(input);
    this.observe(req.now);
    this.maintain(req.now);
    const rows = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = 'dead', error = ?, queue_deadline = NULL, finished_at = ?, updated_at = ?
         WHERE status IN ('queued', 'held') AND json_extract(owner, '$.kind') = ? AND json_extract(owner, '$.id') = ? RETURNING *`,
        JSON.stringify(req.error),
        req.now,
        req.now,
        req.owner.kind,
        req.owner.id,
      )
      .toArray();
    for (const row of rows)
      this.outbox.record(row, { type: "job.dead", status: "dead", at: req.now, reason: req.error.code, error: req.error });
    await this.settle();
    return { withdrawn: rows.map((r) => r.job_id) };
  }

  /**
   * Sets the hold keys in force to exactly `keys` (D1 decides them: src/employees/holds.ts). Queued
   * jobs under a hold become `held`; held jobs no hold covers any more are queued again with a fresh
   * queue-time limit, since the wait was not theirs. Repeating it is harmless.
   */
  async syncHolds(input: SyncHoldsInput): Promise<{ held: number; released: number }> {
    const req = syncHoldsInput.parse(input);
    this.observe(req.now);
    const wanted = new Set(req.keys);
    for (const key of [...this.holds]) {
      if (wanted.has(key)) continue;
      this.sql.exec(`DELETE FROM holds WHERE hold_key = ?`, key);
      this.holds.delete(key);
    }
    for (const key of wanted) {
      if (this.holds.has(key)) continue;
      this.sql.exec(`INSERT INTO holds (hold_key, since) VALUES (?, ?) ON CONFLICT (hold_key) DO NOTHING`, key, req.now);
      this.holds.add(key);
    }
    const held = this.holdQueued();
    this.endRetiredJobs(req.now);
    const released = this.sql
      .exec(
        `UPDATE jobs SET status = 'queued', queue_deadline = ? + max_queue_ms, updated_at = ? WHERE status = 'held' AND NOT (${UNDER_HOLD}) RETURNING job_id`,
        req.now,
        req.now,
      )
      .toArray().length;
    if (released > 0) {
      this.deadlines.lower(req.now);
      this.wakeWaiters();
    }
    await this.settle();
    return { held, released };
  }

  /**
   * A retired employee's jobs that no runner has taken (queued or held) end `dead` with the given
   * error, and their owners are told; leased ones finish with their holder.
   */
  async withdrawEmployee(input: WithdrawEmployeeInput): Promise<{ withdrawn: string[] }> {
    const req = withdrawEmployeeInput.parse(input);
    this.observe(req.now);
    const rows = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = 'dead', error = ?, queue_deadline = NULL, finished_at = ?, updated_at = ?
         WHERE employee_id = ? AND status IN ('queued', 'held') RETURNING *`,
        JSON.stringify(req.error),
        req.now,
        req.now,
        req.employeeId,
      )
      .toArray();
    for (const row of rows)
      this.outbox.record(row, { type: "job.dead", status: "dead", at: req.now, reason: req.error.code, error: req.error });
    await this.settle();
    return { withdrawn: rows.map((r) => r.job_id) };
  }

  /** How many jobs wait under each hold key (the holds view). */
  async heldCounts(): Promise<{ keys: string[]; held_jobs: { employee_id: string | null; project_id: string | null; jobs: number }[] }> {
    const held_jobs = this.sql
      .exec<{ employee_id: string | null; project_id: string | null; jobs: number }>(
        `SELECT employee_id, project_id, COUNT(*) AS jobs FROM jobs WHERE status = 'held' GROUP BY 1, 2`,
      )
      .toArray();
    return { keys: [...this.holds].sort(), held_jobs };
  }

  /** The `leases` tick: the lazy checks, outbox delivery, and pruning of long-finished jobs. */
  async sweep(input: SweepInput): Promise<Maintenance & { pruned: number; pending_notices: number }> {
    const req = sweepInput.parse(input);
    this.observe(req.now);
    this.deadlines.forget();
    const changed = this.maintain(req.now);
    await this.settle();
    const pending = this.outbox.pending();
    // Only once every notice reached D1, which then holds the finished jobs' record.
    const pruned = req.retainFinishedMs !== undefined && pending === 0 ? this.prune(req.now - req.retainFinishedMs) : 0;
    return { ...changed, pruned, pending_notices: pending };
  }

  /** When each runner last asked for work and how many jobs it holds: is the fleet alive? */
  async runnerActivity(): Promise<RunnerActivity[]> {
    return this.sql
      .exec<{ runner_id: string; last_poll_at: number; leased_jobs: number }>(
        `SELECT r.runner_id, r.last_poll_at, (SELECT COUNT(*) FROM jobs j WHERE j.leased_by = r.runner_id AND j.status = 'leased') AS leased_jobs
         FROM runners r`,
      )
      .toArray()
      .map((r) => ({ runner_id: r.runner_id, last_poll_at: new Date(r.last_poll_at).toISOString(), leased_jobs: r.leased_jobs }));
  }

  async get(jobId: string): Promise<InboxJobView | null> {
    const row = this.findRow(z.string().parse(jobId));
    return row ? toView(row) : null;
  }

  override async alarm(): Promise<void> {
    this.alarmAt = undefined;
    const clock = await loadClock(this.env);
    this.offsetMs = clock.offsetMs;
    this.deadlines.forget();
    this.maintain(clock.nowMs());
    await this.settle();
  }

  // --- internals: everything up to settle() is synchronous on purpose (atomicity) ---

  /**
   * Callers pass `now` from their Clock (the test clock outside production); remembering its
   * distance from real time lets deadlines in clock time be mapped onto a real alarm.
   */
  private observe(now: number): void {
    this.offsetMs = now - Date.now();
  }

  /**
   * Inserts the jobs it does not hold yet, in one statement (a dispatch batch is up to 100 jobs: one
   * `exec` per job cost a twentieth of the isolate's time under submit load, most of it per call, not
   * SQLite's); returns the ids it inserted. Each row travels as an array in one bound JSON parameter,
   * its payload and owner as JSON text, so the stored text is exactly what `JSON.stringify` wrote.
   */
  private insertQueued(messages: readonly DispatchMessage[], maxAttempts: number, maxQueueMs: number, now: number): Set<string> {
    const rows = messages.map((message) => {
      // Queue order and the queue-time limit run from the submission, not from arrival here.
      const submittedAt = Math.min(Date.parse(message.enqueued_at), now);
      this.deadlines.lower(submittedAt + maxQueueMs);
      const { employeeId, projectId } = jobAttribution(message);
      const held = this.holds.size > 0 && isUnderHold(this.holds, employeeId, projectId);
      return {
        jobId: message.job_id,
        employeeId,
        row: [
          message.job_id,
          message.kind,
          message.payload.runtime,
          JSON.stringify(message.payload),
          JSON.stringify(message.owner),
          held ? "held" : "queued",
          submittedAt,
          held ? null : submittedAt + maxQueueMs,
          employeeId,
          projectId,
        ],
      };
    });
    const inserted = new Set(
      this.sql
        .exec<{ job_id: string }>(INSERT_QUEUED_SQL, JSON.stringify(rows.map((r) => r.row)), maxAttempts, now, maxQueueMs)
        .toArray()
        .map((r) => r.job_id),
    );
    // A job of a retired employee that was still on its way here ends at once.
    for (const { jobId, employeeId } of rows)
      if (employeeId !== null && inserted.has(jobId) && this.holds.has(`retired:${employeeId}`)) this.endRetiredJobs(now, jobId);
    return inserted;
  }

  private claim(req: z.infer<typeof leaseInput>, now: number, provisional: boolean): LeasedJob[] {
    const runtimes = req.runtimes.length > 1 ? [...new Set(req.runtimes)] : req.runtimes;
    if (runtimes.length === 0) return [];
    // A job that came back to the queue (a retry, a released claim) under a hold is held again first.
    if (this.holds.size > 0) {
      this.holdQueued();
      this.endRetiredJobs(now);
    }
    const ready = this.sql.exec<{ job_id: string }>(readySql(runtimes.length), ...runtimes, req.capacity).toArray();
    const leased: LeasedJob[] = [];
    const expiresAt = now + req.visibilityMs;
    const ackDeadline = provisional ? Math.min(now + req.ackWindowMs, expiresAt) : null;
    for (const { job_id } of ready) {
      const leaseId = newId("lease");
      // A new attempt starts without the last one's error (its attempt record keeps it): `fail`
      // reads an error beside this lease as "a failure under it was already applied".
      const row = this.sql
        .exec<JobRow>(
          `UPDATE jobs SET status = 'leased', attempt = attempt + 1, lease_id = ?, lease_expires_at = ?, leased_by = ?, poll_id = ?,
             acked = ?, ack_deadline = ?, leased_at = ?, queue_deadline = NULL, error = NULL, updated_at = ?
           WHERE job_id = ? AND status = 'queued' RETURNING *`,
          leaseId,
          expiresAt,
          req.runnerId,
          req.pollId ?? null,
          provisional ? 0 : 1,
          ackDeadline,
          now,
          now,
          job_id,
        )
        .toArray()[0];
      if (!row) continue;
      this.deadlines.noteRow(row);
      this.outbox.record(row, { type: "job.leased", status: "leased", at: now, attempt_record: attemptRecord(row, "leased", null) });
      leased.push({
        job_id: row.job_id,
        lease_id: leaseId,
        lease_expires_at: new Date(expiresAt).toISOString(),
        lease_ms: req.visibilityMs,
        ack_required: provisional,
        ...(ackDeadline !== null ? { ack_within_ms: ackDeadline - now } : {}),
        kind: row.kind,
        attempt: row.attempt,
        payload: JSON.parse(row.payload) as DispatchMessage["payload"],
      });
    }
    return leased;
  }

  /** The time-based rules, checked lazily by every call (and by the alarm and the tick). */
  private maintain(now: number): Maintenance {
    const changed: Maintenance = { requeued: 0, dead: 0, unacknowledged: 0, no_runner: 0 };
    if (!this.deadlines.mayBeDue(now)) return changed;
    const unacked = this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE acked = 0 AND ack_deadline <= ? AND status = 'leased'`, now).toArray();
    for (const job of unacked) this.release(job, now, "lease_unacknowledged");
    changed.unacknowledged = unacked.length;

    const lapsed = this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE status = 'leased' AND lease_expires_at <= ?`, now).toArray();
    for (const job of lapsed) {
      if (this.lapse(job, now, "lease_expired") === "dead") changed.dead++;
      else changed.requeued++;
    }

    const waitedOut = this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE status = 'queued' AND queue_deadline <= ?`, now).toArray();
    for (const job of waitedOut) {
      const error: JobError = {
        code: "no_runner",
        message: `no runner offering '${job.runtime}' took the job within ${Math.round(job.max_queue_ms / 60_000)} min of queueing`,
      };
      const row = this.sql
        .exec<JobRow>(
          `UPDATE jobs SET status = 'dead', error = ?, queue_deadline = NULL, finished_at = ?, updated_at = ? WHERE job_id = ? RETURNING *`,
          JSON.stringify(error),
          now,
          now,
          job.job_id,
        )
        .one();
      this.outbox.record(row, { type: "job.dead", status: "dead", at: now, reason: "no_runner", error });
    }
    changed.no_runner = waitedOut.length;
    this.deadlines.recompute();
    if (unacked.length > 0 || changed.requeued > 0) this.wakeWaiters();
    return changed;
  }

  /**
   * Jobs of a retired employee (hold key `retired:<id>`) that no runner took end `dead` with
   * `employee_retired`, their owners told: they must not wait, held, for an employee who never returns.
   */
  private endRetiredJobs(now: number, jobId?: string): string[] {
    if (![...this.holds].some((k) => k.startsWith("retired:"))) return [];
    const rows = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = 'dead', error = json_object('code', 'employee_retired', 'message', 'employee ' || employee_id || ' was retired before a runner took this job'),
           queue_deadline = NULL, finished_at = ?, updated_at = ?
         WHERE status IN ('queued', 'held') AND (? IS NULL OR job_id = ?)
           AND EXISTS (SELECT 1 FROM holds WHERE hold_key = 'retired:' || jobs.employee_id) RETURNING *`,
        now,
        now,
        jobId ?? null,
        jobId ?? null,
      )
      .toArray();
    for (const row of rows) {
      const error = JSON.parse(row.error!) as JobError;
      this.outbox.record(row, { type: "job.dead", status: "dead", at: now, reason: error.code, error });
    }
    return rows.map((r) => r.job_id);
  }

  /** Queued jobs under a hold in force become `held` (their queue-time limit stops); returns how many. */
  private holdQueued(): number {
    if (this.holds.size === 0) return 0;
    return this.sql
      .exec(`UPDATE jobs SET status = 'held', queue_deadline = NULL WHERE status = 'queued' AND (${UNDER_HOLD}) RETURNING job_id`)
      .toArray().length;
  }

  /** Back to the queue without counting the attempt: the claim never reached a live runner. */
  private release(job: JobRow, now: number, reason: "lease_undelivered" | "lease_unacknowledged" | "runner_revoked") {
    const row = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = 'queued', attempt = attempt - 1, lease_id = NULL, lease_expires_at = NULL, leased_by = NULL, poll_id = NULL,
           acked = 1, ack_deadline = NULL, queue_deadline = ? + max_queue_ms, updated_at = ? WHERE job_id = ? RETURNING *`,
        now,
        now,
        job.job_id,
      )
      .one();
    this.deadlines.noteRow(row);
    this.outbox.record(row, {
      type: "job.requeued",
      status: "queued",
      at: now,
      reason,
      attempt_record: attemptRecord(job, "released", now),
    });
  }

  /** A lease ended without a word from its holder: the attempt counts; the job retries or is dead. */
  private lapse(job: JobRow, now: number, reason: "lease_expired" | "runner_revoked"): "queued" | "dead" {
    const decision = afterLeaseExpired(job.attempt, job.max_attempts);
    const error: JobError =
      reason === "lease_expired"
        ? { code: "lease_expired", message: `lease expired on attempt ${job.attempt} of ${job.max_attempts}` }
        : { code: "runner_revoked", message: `the runner holding attempt ${job.attempt} of ${job.max_attempts} was revoked` };
    // After an expiry lease_id is kept: the lapsed holder may still finish the job until someone
    // re-leases it. A revoked runner may not, so its lease is cleared.
    const clearHolder = reason === "runner_revoked" ? 1 : 0;
    const dead = decision.status === "dead";
    const row = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = ?, lease_expires_at = NULL, error = CASE WHEN ? THEN ? ELSE error END,
           lease_id = CASE WHEN ? THEN NULL ELSE lease_id END, leased_by = CASE WHEN ? THEN NULL ELSE leased_by END,
           queue_deadline = CASE WHEN ? THEN NULL ELSE ? + max_queue_ms END, finished_at = ?, updated_at = ?
         WHERE job_id = ? RETURNING *`,
        decision.status,
        dead ? 1 : 0,
        JSON.stringify(error),
        clearHolder,
        clearHolder,
        dead ? 1 : 0,
        now,
        dead ? now : null,
        now,
        job.job_id,
      )
      .one();
    this.deadlines.noteRow(row);
    this.outbox.record(row, {
      type: dead ? "job.dead" : "job.requeued",
      status: decision.status,
      at: now,
      reason,
      ...(dead ? { error } : {}),
      attempt_record: attemptRecord(job, reason, now, error),
    });
    return decision.status;
  }

  /** Finished jobs older than the cutoff leave the inbox (D1 keeps them); queued or leased ones never. */
  private prune(cutoff: number): number {
    let pruned = 0;
    for (let round = 0; round < PRUNE_ROUNDS; round++) {
      const deleted = this.sql
        .exec(
          `DELETE FROM jobs WHERE job_id IN (
             SELECT job_id FROM jobs WHERE finished_at IS NOT NULL AND finished_at <= ? AND status IN ('completed', 'failed', 'dead') LIMIT ?)
           RETURNING job_id`,
          cutoff,
          PRUNE_BATCH,
        )
        .toArray().length;
      pruned += deleted;
      if (deleted < PRUNE_BATCH) break;
    }
    return pruned;
  }

  /** The runner's poll time, written when it moved by a second or more (the activity view's precision). */
  private notePoll(runnerId: string, now: number): void {
    const written = this.pollWritten.get(runnerId);
    if (written !== undefined && Math.abs(now - written) < POLL_PRECISION_MS) return;
    this.pollWritten.set(runnerId, now);
    this.sql.exec(
      `INSERT INTO runners (runner_id, last_poll_at) VALUES (?, ?) ON CONFLICT(runner_id) DO UPDATE SET last_poll_at = excluded.last_poll_at`,
      runnerId,
      now,
    );
  }

  private holdsLease(job: JobRow, leaseId: string, runnerId: string): boolean {
    return job.status === "leased" && job.lease_id === leaseId && job.leased_by === runnerId && !this.revoked.has(runnerId);
  }

  private findRow(jobId: string): JobRow | undefined {
    return this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE job_id = ?`, jobId).toArray()[0];
  }

  private wakeWaiters() {
    for (const waiter of this.waiters) waiter.wake();
    this.waiters.clear();
  }

  private waitForWork(runnerId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(wake, Math.max(0, ms));
      const waiter: Waiter = { runnerId, wake };
      const waiters = this.waiters;
      function wake() {
        clearTimeout(timer);
        waiters.delete(waiter);
        resolve();
      }
      this.waiters.add(waiter);
    });
  }

  private async settled<T>(outcome: T): Promise<T> {
    await this.settle();
    return outcome;
  }

  /**
   * Mirrors the outbox to D1, tells owners of ended jobs, then points the alarm at the next
   * deadline. Awaited by every call: I/O left running after a request ends is not reliable in
   * workerd, and the caller then reads its own writes in D1.
   */
  private async settle(): Promise<void> {
    await this.outbox.deliver();
    await this.scheduleAlarm();
  }

  /**
   * One alarm, no later than the earliest deadline (in real time): a lease expiry, an ack window,
   * a queue-time limit, a retry of undelivered notices or of an owner call. An alarm that fires
   * early only re-checks and re-arms, so it is moved only when it must come sooner: most calls
   * then cost no storage write for it.
   */
  private async scheduleAlarm() {
    const candidates: number[] = [];
    // A lower bound: an alarm it brings too early re-checks and re-arms.
    const earliest = this.deadlines.earliest();
    if (earliest !== null) candidates.push(earliest - this.offsetMs);
    const outbox = this.outbox.nextDeadline();
    if (outbox !== null) candidates.push(outbox);
    if (candidates.length === 0) return;
    const target = Math.max(Date.now(), Math.min(...candidates));
    if (this.alarmAt !== undefined && this.alarmAt !== null && this.alarmAt <= target) return;
    if (this.alarmAt === undefined) {
      const current = await this.ctx.storage.getAlarm();
      if (current !== null && current <= target) {
        this.alarmAt = current;
        return;
      }
    }
    await this.ctx.storage.setAlarm(target);
    this.alarmAt = target;
  }
}

const CANCELLED_POLL_MEMORY_MS = 60_000;
const POLL_PRECISION_MS = 1_000;
const PRUNE_BATCH = 5_000;
const PRUNE_ROUNDS = 40;

/**
 * The next `capacity` queued jobs of the given runtimes, oldest first: ?1…?n the runtimes, ?(n+1)
 * the capacity. Each runtime is its own seek of `jobs_ready_order` (the index holds the whole
 * order), merged over at most n × capacity rows. `runtime IN (…)` sorted every queued job of those
 * runtimes on every lease, however deep the queue (issue 26).
 */
function readySql(runtimes: number): string {
  let cached = READY_SQL[runtimes];
  if (cached) return cached;
  // Each parameter is read through a constant subquery, `(SELECT ?n)`: the same index seek, but the
  // planner does not look at the bound value, which would have SQLite compile the statement again on
  // every lease (docs/architecture.md, "Hot-path SQL").
  const cap = `(SELECT ?${runtimes + 1})`;
  const seek = (i: number) =>
    `SELECT job_id, enqueued_at FROM jobs WHERE status = 'queued' AND runtime = (SELECT ?${i + 1}) ORDER BY enqueued_at, job_id LIMIT ${cap}`;
  cached =
    runtimes === 1
      ? seek(0)
      : `SELECT job_id FROM (${Array.from({ length: runtimes }, (_, i) => `SELECT * FROM (${seek(i)})`).join(" UNION ALL ")})
         ORDER BY enqueued_at, job_id LIMIT ${cap}`;
  READY_SQL[runtimes] = cached;
  return cached;
}

const READY_SQL: string[] = [];

/** A job row under a hold in force (the `holds` table), as SQL over `jobs`. */
const UNDER_HOLD = `EXISTS (SELECT 1 FROM holds WHERE hold_key = 'company' OR hold_key = 'employee:' || jobs.employee_id OR hold_key = 'project:' || jobs.project_id)`;

/**
 * `insertQueued`'s statement: ?1 a JSON array of rows (`[job_id, kind, runtime, payload, owner,
 * status, enqueued_at, queue_deadline, employee_id, project_id]`), ?2 max attempts, ?3 now, ?4 max
 * queue ms. `WHERE true` lets the upsert clause follow a SELECT; rows go in array order, so of two
 * rows with one id the first is kept, as one insert per job kept it.
 */
const INSERT_QUEUED_SQL = `INSERT INTO jobs (job_id, kind, runtime, payload, owner, status, attempt, max_attempts, enqueued_at, updated_at,
     max_queue_ms, queue_deadline, employee_id, project_id)
   SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, 0, ?2, value ->> 6, ?3,
     ?4, value ->> 7, value ->> 8, value ->> 9
   FROM json_each(?1) WHERE true
   ON CONFLICT(job_id) DO NOTHING RETURNING job_id`;

/** The same test in memory, for a job arriving. */
function isUnderHold(holds: ReadonlySet<string>, employeeId: string | null, projectId: string | null): boolean {
  return (
    holds.has("company") ||
    (employeeId !== null && holds.has(`employee:${employeeId}`)) ||
    (projectId !== null && holds.has(`project:${projectId}`))
  );
}

/**
 * Whose work a job is: the employee its payload names (a solo turn, a team stage, an eval case for
 * one), the project that owns it or that its payload names. Read here so holds need no D1 lookup.
 */
export function jobAttribution(message: Pick<DispatchMessage, "payload" | "owner">): {
  employeeId: string | null;
  projectId: string | null;
} {
  const payload = message.payload as Record<string, unknown>;
  const employeeId = typeof payload.employee_id === "string" ? payload.employee_id : null;
  const projectId =
    message.owner.kind === "project" ? message.owner.id : typeof payload.project_id === "string" ? payload.project_id : null;
  return { employeeId, projectId };
}

/** Outside the inbox a held job is queued: `held` is how the inbox keeps it, not a job status. */
function publicStatus(status: JobRow["status"]): JobStatus {
  return status === "held" ? "queued" : status;
}

function holder(row: JobRow) {
  return { status: publicStatus(row.status), leaseId: row.lease_id, leasedBy: row.leased_by };
}

function attemptRecord(job: JobRow, status: AttemptRecord["status"], endedAt: number | null, error?: JobError): AttemptRecord {
  return {
    attempt: job.attempt,
    runner_id: job.leased_by,
    status,
    started_at: new Date(job.leased_at ?? job.updated_at).toISOString(),
    ended_at: endedAt === null ? null : new Date(endedAt).toISOString(),
    ...(error ? { error } : {}),
  };
}

function toView(row: JobRow): InboxJobView {
  return {
    job_id: row.job_id,
    kind: row.kind,
    status: publicStatus(row.status),
    ...(row.status === "held" ? { held: true } : {}),
    attempt: row.attempt,
    lease_expires_at: row.lease_expires_at === null ? null : new Date(row.lease_expires_at).toISOString(),
    leased_by: row.leased_by,
    acknowledged: row.acked === 1,
  };
}
