import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { getDb } from "../db/client";
import type { JobStatus } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { newId } from "../lib/ids";
import { afterFailure, afterLeaseExpired, checkFinish } from "../jobs/lease-policy";
import { isJobEnd, notifyOwner, type JobEnd } from "../jobs/owner-handlers";
import { recordInboxNotices, recordOwnerGaveUp, type InboxNotice } from "../jobs/outcomes";
import { jobError, jobResult, RUNTIMES } from "../jobs/payloads";
import { dispatchMessage, type DispatchMessage } from "../queues/dispatch-message";

/**
 * The fleet's lease queue. Every state change is a synchronous `ctx.storage.sql` block with no
 * `await` inside, so under the input gate it is atomic: two runners can never lease one job.
 * Changes are mirrored to D1 (the `jobs` row and the events feed) through an outbox, delivered
 * after the change and retried by the alarm, so a D1 hiccup delays the trail but never loses it.
 * Deliveries may overlap or repeat; D1 applies each job's notices in seq order regardless.
 */
export class RunnerInbox extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly waiters = new Set<() => void>();
  /** Long-polls their runner gave up on (poll id → when), so they stop waiting and claim nothing. */
  private readonly cancelledPolls = new Map<string, number>();
  /** The latest test-clock offset a caller gave us; maps clock-time expiries onto real alarms. */
  private offsetMs = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS jobs (
        job_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        runtime TEXT NOT NULL,
        payload TEXT NOT NULL,
        owner TEXT NOT NULL,
        status TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL,
        lease_id TEXT,
        lease_expires_at INTEGER,
        leased_by TEXT,
        poll_id TEXT,
        result TEXT,
        error TEXT,
        enqueued_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS jobs_ready ON jobs(status, runtime, enqueued_at);
      CREATE INDEX IF NOT EXISTS jobs_leases ON jobs(status, lease_expires_at);
      CREATE TABLE IF NOT EXISTS runners (
        runner_id TEXT PRIMARY KEY,
        last_poll_at INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        notice TEXT NOT NULL
      );
      -- Owner handlers still to call for jobs that ended (DESIGN.md "Model work"), each after its
      -- notice reached D1. next_at is real time; a call in progress holds it a while ahead.
      CREATE TABLE IF NOT EXISTS owner_calls (
        seq INTEGER PRIMARY KEY,
        job_end TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL
      );
    `);
  }

  async enqueue(input: EnqueueInput): Promise<{ accepted: boolean }> {
    const { message, maxAttempts, now } = enqueueInput.parse(input);
    this.observe(now);
    const inserted = this.sql
      .exec(
        `INSERT INTO jobs (job_id, kind, runtime, payload, owner, status, attempt, max_attempts, enqueued_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?) ON CONFLICT(job_id) DO NOTHING RETURNING job_id`,
        message.job_id,
        message.kind,
        message.payload.runtime,
        JSON.stringify(message.payload),
        JSON.stringify(message.owner),
        maxAttempts,
        now,
        now,
      )
      .toArray();
    if (inserted.length > 0) this.wakeWaiters();
    return { accepted: inserted.length > 0 };
  }

  /**
   * Long-poll: claims up to `capacity` jobs, waiting up to `waitMs` (real time, not the test
   * clock: it bounds an HTTP request) for work to arrive.
   */
  async lease(input: LeaseInput): Promise<LeasedJob[]> {
    const req = leaseInput.parse(input);
    const deadline = Date.now() + req.waitMs;
    const offsetMs = this.observe(req.now);
    this.sql.exec(
      `INSERT INTO runners (runner_id, last_poll_at) VALUES (?, ?) ON CONFLICT(runner_id) DO UPDATE SET last_poll_at = excluded.last_poll_at`,
      req.runnerId,
      req.now,
    );
    let claimed: LeasedJob[] = [];
    // The caller's `now` holds until we wait; after a wait the clock has moved on by real time.
    let now = req.now;
    for (;;) {
      if (req.pollId && this.cancelledPolls.delete(req.pollId)) break;
      this.expireLeases(now);
      claimed = this.claim(req, now);
      if (claimed.length > 0 || Date.now() >= deadline) break;
      await this.waitForWork(deadline - Date.now());
      now = Date.now() + offsetMs;
    }
    await this.settle();
    return claimed;
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
    const released = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET status = 'queued', attempt = attempt - 1, lease_id = NULL, lease_expires_at = NULL, leased_by = NULL, poll_id = NULL, updated_at = ?
         WHERE poll_id = ? AND leased_by = ? AND status = 'leased' RETURNING *`,
        req.now,
        req.pollId,
        req.runnerId,
      )
      .toArray();
    for (const row of released) this.notice(row, { type: "job.requeued", status: "queued", at: req.now, reason: "lease_undelivered" });
    this.wakeWaiters();
    await this.settle();
    return { released: released.length };
  }

  async extend(input: ExtendInput): Promise<{ ok: true; lease_expires_at: string } | { ok: false; reason: "not_found" | "stale_lease" }> {
    const req = extendInput.parse(input);
    const now = req.now;
    this.observe(now);
    this.expireLeases(now);
    const expiresAt = now + req.extendMs;
    const row = this.sql
      .exec<{ job_id: string }>(
        `UPDATE jobs SET lease_expires_at = ?, updated_at = ? WHERE job_id = ? AND lease_id = ? AND status = 'leased' RETURNING job_id`,
        expiresAt,
        now,
        req.jobId,
        req.leaseId,
      )
      .toArray();
    await this.settle();
    if (row.length > 0) return { ok: true, lease_expires_at: new Date(expiresAt).toISOString() };
    return { ok: false, reason: this.findRow(req.jobId) ? "stale_lease" : "not_found" };
  }

  async complete(input: CompleteInput): Promise<FinishOutcome> {
    const req = completeInput.parse(input);
    const now = req.now;
    this.observe(now);
    this.expireLeases(now);
    const job = this.findRow(req.jobId);
    if (!job) return { ok: false, reason: "not_found" };
    const check = checkFinish(rowLease(job), req.leaseId, "completed");
    if (check === "stale") return { ok: false, reason: "stale_lease", status: job.status };
    if (check === "duplicate") return { ok: true, duplicate: true, status: job.status };
    this.sql.exec(
      `UPDATE jobs SET status = 'completed', result = ?, error = NULL, lease_expires_at = NULL, updated_at = ? WHERE job_id = ?`,
      JSON.stringify(req.result),
      now,
      req.jobId,
    );
    this.notice(job, { type: "job.completed", status: "completed", at: now, result: req.result });
    await this.settle();
    return { ok: true, duplicate: false, status: "completed" };
  }

  async fail(input: FailInput): Promise<FinishOutcome> {
    const req = failInput.parse(input);
    const now = req.now;
    this.observe(now);
    this.expireLeases(now);
    const job = this.findRow(req.jobId);
    if (!job) return { ok: false, reason: "not_found" };
    const decision = afterFailure(job.attempt, job.max_attempts, req.retryable);
    // A retried failure leaves the job queued again; repeating it under the same lease is a no-op.
    const alreadyApplied = job.status !== "leased" && job.error !== null && job.lease_id === req.leaseId;
    const check = alreadyApplied ? "duplicate" : checkFinish(rowLease(job), req.leaseId, decision.status);
    if (check === "stale") return { ok: false, reason: "stale_lease", status: job.status };
    if (check === "duplicate") return { ok: true, duplicate: true, status: job.status };
    this.sql.exec(
      `UPDATE jobs SET status = ?, error = ?, lease_expires_at = NULL, updated_at = ? WHERE job_id = ?`,
      decision.status,
      JSON.stringify(req.error),
      now,
      req.jobId,
    );
    const type = decision.status === "queued" ? "job.requeued" : decision.status === "dead" ? "job.dead" : "job.failed";
    this.notice(job, { type, status: decision.status, at: now, error: req.error, reason: decision.reason });
    if (decision.status === "queued") this.wakeWaiters();
    await this.settle();
    return { ok: true, duplicate: false, status: decision.status };
  }

  /** The `leases` tick: lapse expired leases and deliver anything still in the outbox. */
  async sweep(input: { now: number }): Promise<{ requeued: number; dead: number; pending_notices: number }> {
    const { now } = z.object({ now: z.number().int() }).parse(input);
    this.observe(now);
    const lapsed = this.expireLeases(now);
    await this.settle();
    const pending = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM outbox`).one().n;
    return { ...lapsed, pending_notices: pending };
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
    const clock = await loadClock(this.env);
    this.offsetMs = clock.offsetMs;
    this.expireLeases(clock.nowMs());
    await this.settle();
  }

  // --- internals: everything up to settle() is synchronous on purpose (atomicity) ---

  /**
   * Callers pass `now` from their Clock (the test clock outside production); remembering its
   * distance from real time lets expiries in clock time be mapped onto a real alarm.
   */
  private observe(now: number): number {
    this.offsetMs = now - Date.now();
    return this.offsetMs;
  }

  private claim(req: z.infer<typeof leaseInput>, now: number): LeasedJob[] {
    const placeholders = req.runtimes.map(() => "?").join(", ");
    const ready = this.sql
      .exec<{ job_id: string }>(
        `SELECT job_id FROM jobs WHERE status = 'queued' AND runtime IN (${placeholders}) ORDER BY enqueued_at, job_id LIMIT ?`,
        ...req.runtimes,
        req.capacity,
      )
      .toArray();
    const leased: LeasedJob[] = [];
    for (const { job_id } of ready) {
      const leaseId = newId("lease");
      const expiresAt = now + req.visibilityMs;
      const row = this.sql
        .exec<JobRow>(
          `UPDATE jobs SET status = 'leased', attempt = attempt + 1, lease_id = ?, lease_expires_at = ?, leased_by = ?, poll_id = ?, updated_at = ?
           WHERE job_id = ? AND status = 'queued' RETURNING *`,
          leaseId,
          expiresAt,
          req.runnerId,
          req.pollId ?? null,
          now,
          job_id,
        )
        .toArray()[0];
      if (!row) continue;
      this.notice(row, { type: "job.leased", status: "leased", at: now });
      leased.push({
        job_id: row.job_id,
        lease_id: leaseId,
        lease_expires_at: new Date(expiresAt).toISOString(),
        lease_ms: req.visibilityMs,
        kind: row.kind,
        attempt: row.attempt,
        payload: JSON.parse(row.payload) as DispatchMessage["payload"],
      });
    }
    return leased;
  }

  private expireLeases(now: number): { requeued: number; dead: number } {
    const lapsed = this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE status = 'leased' AND lease_expires_at <= ?`, now).toArray();
    let requeued = 0;
    let dead = 0;
    for (const job of lapsed) {
      const decision = afterLeaseExpired(job.attempt, job.max_attempts);
      const error =
        decision.status === "dead"
          ? { code: "lease_expired", message: `lease expired on attempt ${job.attempt} of ${job.max_attempts}` }
          : null;
      // lease_id is kept: the lapsed holder may still finish the job until someone re-leases it.
      this.sql.exec(
        `UPDATE jobs SET status = ?, lease_expires_at = NULL, error = COALESCE(?, error), updated_at = ? WHERE job_id = ?`,
        decision.status,
        error ? JSON.stringify(error) : null,
        now,
        job.job_id,
      );
      this.notice(job, {
        type: decision.status === "dead" ? "job.dead" : "job.requeued",
        status: decision.status,
        at: now,
        reason: decision.reason,
        ...(error ? { error } : {}),
      });
      if (decision.status === "dead") dead++;
      else requeued++;
    }
    if (requeued > 0) this.wakeWaiters();
    return { requeued, dead };
  }

  private notice(
    job: JobRow,
    change: Omit<InboxNotice, "job_id" | "kind" | "owner" | "attempt" | "leased_by" | "at"> & { at: number; attempt?: number },
  ) {
    const fresh = this.findRow(job.job_id) ?? job;
    const notice: InboxNotice = {
      job_id: job.job_id,
      kind: job.kind,
      owner: JSON.parse(job.owner) as InboxNotice["owner"],
      attempt: fresh.attempt,
      leased_by: fresh.leased_by,
      ...change,
      at: new Date(change.at).toISOString(),
    };
    const { seq } = this.sql.exec<{ seq: number }>(`INSERT INTO outbox (notice) VALUES (?) RETURNING seq`, JSON.stringify(notice)).one();
    if (isJobEnd(notice.status)) {
      const end: JobEnd = {
        job_id: notice.job_id,
        kind: notice.kind,
        owner: notice.owner,
        status: notice.status,
        attempt: notice.attempt,
        at: notice.at,
        ...(notice.result !== undefined ? { result: notice.result } : {}),
        ...(notice.error !== undefined ? { error: notice.error } : {}),
        ...(notice.reason !== undefined ? { reason: notice.reason } : {}),
      };
      this.sql.exec(`INSERT INTO owner_calls (seq, job_end, next_at) VALUES (?, ?, ?)`, seq, JSON.stringify(end), Date.now());
    }
  }

  private findRow(jobId: string): JobRow | undefined {
    return this.sql.exec<JobRow>(`SELECT * FROM jobs WHERE job_id = ?`, jobId).toArray()[0];
  }

  private wakeWaiters() {
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  private waitForWork(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.add(done);
    });
  }

  /**
   * Mirrors the outbox to D1, then points the alarm at the next lease expiry (or a retry). Awaited
   * by every call that changed something: I/O left running after a request ends is not reliable
   * in workerd, and the caller then reads its own writes in D1.
   */
  private async settle(): Promise<void> {
    try {
      for (;;) {
        const rows = this.sql.exec<{ seq: number; notice: string }>(`SELECT seq, notice FROM outbox ORDER BY seq LIMIT 50`).toArray();
        if (rows.length === 0) break;
        const notices = rows.map((r) => ({ seq: r.seq, notice: JSON.parse(r.notice) as InboxNotice }));
        await recordInboxNotices(getDb(this.env.DB), this.ctx.id.toString(), notices);
        this.sql.exec(`DELETE FROM outbox WHERE seq <= ?`, rows[rows.length - 1]!.seq);
      }
    } catch (err) {
      // Left in the outbox for the alarm to retry; the lease state itself is already safe.
      console.error("runner-inbox: outbox delivery failed", err);
    }
    await this.callOwners();
    await this.scheduleAlarm();
  }

  /**
   * Tells each ended job's owner, once its notice is in D1 (so the handler reads the final row).
   * A call is claimed synchronously first, so concurrent settles in this object do not repeat it;
   * a failing handler is retried with backoff and, after OWNER_CALL_ATTEMPTS, recorded and dropped.
   */
  private async callOwners(): Promise<void> {
    const realNow = Date.now();
    const due = this.sql
      .exec<{ seq: number; job_end: string; attempts: number }>(
        `UPDATE owner_calls SET next_at = ?, attempts = attempts + 1
         WHERE seq IN (SELECT seq FROM owner_calls WHERE next_at <= ? AND seq < (SELECT COALESCE(MIN(seq), 9e15) FROM outbox) ORDER BY seq LIMIT ?)
         RETURNING seq, job_end, attempts`,
        realNow + OWNER_CALL_HOLD_MS,
        realNow,
        OWNER_CALL_BATCH,
      )
      .toArray()
      .sort((a, b) => a.seq - b.seq);
    for (const call of due) {
      const end = JSON.parse(call.job_end) as JobEnd;
      try {
        await notifyOwner(this.env, end);
        this.sql.exec(`DELETE FROM owner_calls WHERE seq = ?`, call.seq);
      } catch (err) {
        console.error(`runner-inbox: owner handler for ${end.owner.kind}:${end.owner.id} (job ${end.job_id}) failed`, err);
        if (call.attempts >= OWNER_CALL_ATTEMPTS) {
          try {
            await recordOwnerGaveUp(getDb(this.env.DB), end, call.attempts, String(err), new Date(Date.now() + this.offsetMs));
            this.sql.exec(`DELETE FROM owner_calls WHERE seq = ?`, call.seq);
          } catch (recordErr) {
            console.error("runner-inbox: could not record the abandoned owner call; keeping it", recordErr);
          }
        } else {
          const backoff = Math.min(OWNER_CALL_MAX_BACKOFF_MS, 1_000 * 2 ** call.attempts);
          this.sql.exec(`UPDATE owner_calls SET next_at = ? WHERE seq = ?`, Date.now() + backoff, call.seq);
        }
      }
    }
  }

  private hasOutbox(): boolean {
    return this.sql.exec(`SELECT 1 FROM outbox LIMIT 1`).toArray().length > 0;
  }

  /** One alarm: the earliest lease expiry (in real time) or a retry of undelivered notices. */
  private async scheduleAlarm() {
    const next = this.sql.exec<{ m: number | null }>(`SELECT MIN(lease_expires_at) AS m FROM jobs WHERE status = 'leased'`).one().m;
    const candidates: number[] = [];
    if (next !== null) candidates.push(next - this.offsetMs);
    if (this.hasOutbox()) candidates.push(Date.now() + OUTBOX_RETRY_MS);
    const ownerDue = this.sql.exec<{ m: number | null }>(`SELECT MIN(next_at) AS m FROM owner_calls`).one().m;
    if (ownerDue !== null) candidates.push(ownerDue);
    if (candidates.length === 0) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(Date.now(), Math.min(...candidates)));
  }
}

const OUTBOX_RETRY_MS = 5_000;
const OWNER_CALL_BATCH = 20;
/** How long a claimed owner call is held before another settle may try it again. */
const OWNER_CALL_HOLD_MS = 60_000;
const OWNER_CALL_ATTEMPTS = 8;
const OWNER_CALL_MAX_BACKOFF_MS = 5 * 60_000;
const CANCELLED_POLL_MEMORY_MS = 60_000;

const enqueueInput = z.object({
  message: dispatchMessage,
  maxAttempts: z.number().int().min(1).max(10),
  now: z.number().int(),
});
export type EnqueueInput = z.input<typeof enqueueInput>;

const leaseInput = z.object({
  runnerId: z.string().min(1),
  capacity: z.number().int().min(1).max(100),
  runtimes: z.array(z.enum(RUNTIMES)).min(1),
  waitMs: z.number().int().min(0).max(25_000),
  visibilityMs: z.number().int().min(1_000),
  pollId: z.string().min(1).max(64).optional(),
  now: z.number().int(),
});
export type LeaseInput = z.input<typeof leaseInput>;

const cancelPollInput = z.object({ pollId: z.string().min(1).max(64), runnerId: z.string().min(1), now: z.number().int() });
export type CancelPollInput = z.input<typeof cancelPollInput>;

const extendInput = z.object({
  jobId: z.string(),
  leaseId: z.string(),
  extendMs: z.number().int().min(1_000).max(3_600_000),
  now: z.number().int(),
});
export type ExtendInput = z.input<typeof extendInput>;

const completeInput = z.object({ jobId: z.string(), leaseId: z.string(), result: jobResult, now: z.number().int() });
export type CompleteInput = z.input<typeof completeInput>;

const failInput = z.object({
  jobId: z.string(),
  leaseId: z.string(),
  error: jobError,
  retryable: z.boolean(),
  now: z.number().int(),
});
export type FailInput = z.input<typeof failInput>;

export type FinishOutcome =
  | { ok: true; duplicate: boolean; status: JobStatus }
  | { ok: false; reason: "not_found" }
  | { ok: false; reason: "stale_lease"; status: JobStatus };

export interface LeasedJob {
  job_id: string;
  lease_id: string;
  lease_expires_at: string;
  /** The lease length granted, so a runner need not compare our (possibly test) clock with its own. */
  lease_ms: number;
  kind: string;
  attempt: number;
  payload: DispatchMessage["payload"];
}

export interface RunnerActivity {
  runner_id: string;
  last_poll_at: string;
  leased_jobs: number;
}

export interface InboxJobView {
  job_id: string;
  kind: string;
  status: JobStatus;
  attempt: number;
  lease_expires_at: string | null;
  leased_by: string | null;
}

interface JobRow extends Record<string, SqlStorageValue> {
  job_id: string;
  kind: string;
  runtime: string;
  payload: string;
  owner: string;
  status: JobStatus;
  attempt: number;
  max_attempts: number;
  lease_id: string | null;
  lease_expires_at: number | null;
  leased_by: string | null;
  poll_id: string | null;
  result: string | null;
  error: string | null;
  enqueued_at: number;
  updated_at: number;
}

function rowLease(row: JobRow) {
  return { status: row.status, leaseId: row.lease_id };
}

function toView(row: JobRow): InboxJobView {
  return {
    job_id: row.job_id,
    kind: row.kind,
    status: row.status,
    attempt: row.attempt,
    lease_expires_at: row.lease_expires_at === null ? null : new Date(row.lease_expires_at).toISOString(),
    leased_by: row.leased_by,
  };
}

/** The only way to reach an inbox; the fleet shares one unless a caller shards by name. */
export function getRunnerInbox(env: Pick<Env, "RUNNER_INBOX">, name = "fleet") {
  return env.RUNNER_INBOX.getByName(name);
}
