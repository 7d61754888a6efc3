import { getDb } from "../db/client";
import type { Env } from "../env";
import { isJobEnd, type JobEnd } from "../jobs/job-end";
import { recordInboxNotices, recordOwnerGaveUp, type InboxNotice } from "../jobs/outcomes";
import type { JobRow } from "./runner-inbox-schema";

/**
 * The RunnerInbox's way out (issue 20: apart from its lease state): every change is a notice in the
 * `outbox` table, written in the same synchronous step as the change, then mirrored to D1 (the
 * `jobs` row, attempt history and the events feed) after it, and retried by the alarm, so a D1
 * hiccup delays the trail but never loses it. A notice that ends a job also queues an owner call,
 * made once the notice is in D1 (so the owner's handler reads the final row). Deliveries may
 * repeat; D1 applies each job's notices in seq order regardless.
 */
export class InboxOutbox {
  /** The delivery in progress, and the one queued behind it (see `flush`). */
  private delivery: Promise<void> | null = null;
  private nextDelivery: Promise<void> | null = null;
  /**
   * What storage may hold, kept in memory so a call that changed nothing reads nothing (issue 26
   * item 5). Each is false only when storage was seen empty, synchronously, and no notice came since;
   * true at start, so an object that restarts looks once.
   */
  private mayHaveNotices = true;
  private mayHaveOwnerCalls = true;
  /** Notices recorded so far: a delivery that saw none arrive while it awaited D1 knows it is done. */
  private recorded = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly env: Env,
    private readonly inboxId: string,
    private readonly callOwner: (end: JobEnd) => Promise<void>,
    /** The caller's clock offset from real time (the test clock), for the time a give-up is recorded at. */
    private readonly offsetMs: () => number,
  ) {}

  /** Writes the notice of a change to `row` (and the owner call, when the job ended). Synchronous. */
  record(row: JobRow, change: Omit<InboxNotice, "job_id" | "kind" | "owner" | "attempt" | "leased_by" | "at"> & { at: number }): void {
    const notice: InboxNotice = {
      job_id: row.job_id,
      kind: row.kind,
      owner: JSON.parse(row.owner) as InboxNotice["owner"],
      attempt: row.attempt,
      leased_by: row.leased_by,
      ...change,
      at: new Date(change.at).toISOString(),
    };
    const { seq } = this.sql.exec<{ seq: number }>(`INSERT INTO outbox (notice) VALUES (?) RETURNING seq`, JSON.stringify(notice)).one();
    this.mayHaveNotices = true;
    this.recorded++;
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
      this.mayHaveOwnerCalls = true;
    }
  }

  /** Mirrors what is pending to D1, then tells owners of ended jobs. */
  async deliver(): Promise<void> {
    if (this.mayHaveNotices) await this.flush();
    if (this.mayHaveOwnerCalls) await this.callOwners();
  }

  /** When the alarm must come back for this side (real ms), or null: an owner call's retry, undelivered notices. */
  nextDeadline(): number | null {
    const owner = this.mayHaveOwnerCalls
      ? this.sql.exec<{ owner: number | null }>(`SELECT MIN(next_at) AS owner FROM owner_calls`).one().owner
      : null;
    const candidates = [...(owner !== null ? [owner] : []), ...(this.mayHaveNotices ? [Date.now() + OUTBOX_RETRY_MS] : [])];
    return candidates.length ? Math.min(...candidates) : null;
  }

  /**
   * One delivery at a time, and callers that arrive while one is in flight share the next one:
   * under load a single D1 batch carries the notices of many calls, instead of each call paying a
   * round trip of its own. A caller's notice is in the outbox before it asks, so the delivery that
   * starts after it asked carries it.
   */
  private flush(): Promise<void> {
    if (!this.delivery) {
      this.delivery = this.deliverOutbox().finally(() => {
        this.delivery = null;
      });
      return this.delivery;
    }
    this.nextDelivery ??= this.delivery.then(() => {
      this.nextDelivery = null;
      return this.flush();
    });
    return this.nextDelivery;
  }

  private async deliverOutbox(): Promise<void> {
    try {
      // A bounded number of batches per call keeps one invocation's D1 statements well under the
      // platform's per-invocation limit; whatever is left goes with the next call or the alarm.
      for (let round = 0; round < OUTBOX_ROUNDS; round++) {
        const rows = this.sql
          .exec<{ seq: number; notice: string }>(`SELECT seq, notice FROM outbox ORDER BY seq LIMIT ?`, OUTBOX_BATCH)
          .toArray();
        if (rows.length === 0) {
          this.mayHaveNotices = false;
          break;
        }
        const recordedBefore = this.recorded;
        // Results can be large: keep one D1 batch well below its request size.
        let bytes = 0;
        let take = 0;
        while (take < rows.length && (take === 0 || bytes + rows[take]!.notice.length <= OUTBOX_BATCH_BYTES))
          bytes += rows[take++]!.notice.length;
        const batch = rows.slice(0, take);
        await recordInboxNotices(
          getDb(this.env.DB),
          this.inboxId,
          batch.map((r) => ({ seq: r.seq, notice: JSON.parse(r.notice) as InboxNotice })),
        );
        this.sql.exec(`DELETE FROM outbox WHERE seq <= ?`, batch[batch.length - 1]!.seq);
        // Everything the select saw went, and nothing came while D1 was busy: the outbox is empty.
        if (take === rows.length && rows.length < OUTBOX_BATCH && this.recorded === recordedBefore) {
          this.mayHaveNotices = false;
          break;
        }
      }
    } catch (err) {
      // Left in the outbox for the alarm to retry; the lease state itself is already safe.
      console.error("runner-inbox: outbox delivery failed", err);
    }
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
    if (due.length === 0) {
      this.noteOwnerCallsLeft();
      return;
    }
    for (const call of due) {
      const end = JSON.parse(call.job_end) as JobEnd;
      try {
        await this.callOwner(end);
        this.sql.exec(`DELETE FROM owner_calls WHERE seq = ?`, call.seq);
      } catch (err) {
        console.error(`runner-inbox: owner handler for ${end.owner.kind}:${end.owner.id} (job ${end.job_id}) failed`, err);
        if (call.attempts >= OWNER_CALL_ATTEMPTS) {
          try {
            await recordOwnerGaveUp(getDb(this.env.DB), end, call.attempts, String(err), new Date(Date.now() + this.offsetMs()));
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
    this.noteOwnerCallsLeft();
  }

  /** Whether any owner call is left (held, waiting for a retry, or behind an undelivered notice). */
  private noteOwnerCallsLeft(): void {
    this.mayHaveOwnerCalls = this.sql.exec(`SELECT 1 FROM owner_calls LIMIT 1`).toArray().length > 0;
  }
}

const OUTBOX_RETRY_MS = 5_000;
/** Notices per D1 batch (each is two or three statements), and a byte bound for large results. */
const OUTBOX_BATCH = 100;
const OUTBOX_BATCH_BYTES = 1_000_000;
const OUTBOX_ROUNDS = 3;
const OWNER_CALL_BATCH = 20;
/** How long a claimed owner call is held before another settle may try it again. */
const OWNER_CALL_HOLD_MS = 60_000;
const OWNER_CALL_ATTEMPTS = 8;
const OWNER_CALL_MAX_BACKOFF_MS = 5 * 60_000;
