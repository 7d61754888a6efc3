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
 *
 * What D1 and the owners have taken is forgotten lazily (issue 26 item 5): each storage write turn
 * is a commit, and a commit cost the inbox several times what its statements did. So a delivery and
 * an owner call only read; the rows they finished are deleted with the next change's own write, or,
 * when no call is left in flight, at once. An object that restarts in between delivers or calls them
 * again, which both already allow.
 */
export class InboxOutbox {
  /** The delivery in progress, and the one queued behind it (see `flush`). */
  private delivery: Promise<void> | null = null;
  private nextDelivery: Promise<void> | null = null;
  /**
   * What storage may hold that memory does not, so a call reads storage only when it must (issue 26
   * item 5): undelivered notices and owner calls from before a restart, notices beyond what memory
   * keeps, calls waiting for a retry. True at start, so an object that restarts looks once.
   */
  private mayHaveStoredNotices = true;
  private mayHaveStoredCalls = true;
  /**
   * Undelivered notices this object recorded, in seq order, with the size of their stored text: while
   * no notice is only in storage, a delivery takes them from here. Bounded by FRESH_NOTICE_BYTES.
   */
  private freshNotices: { seq: number; notice: InboxNotice; bytes: number }[] = [];
  private freshBytes = 0;
  /** Notices recorded so far: a delivery that saw none arrive while it awaited D1 knows it is done. */
  private recorded = 0;
  /** The last notice D1 has, and the last one deleted: the outbox rows between them go with the next write. */
  private deliveredThrough = 0;
  private droppedThrough = 0;
  /**
   * Owner calls this object recorded and has not tried yet, in seq order: under load every call is
   * one of these, and is made without reading storage.
   */
  private readonly fresh = new Map<number, JobEnd>();
  /** Owner calls being made, or made but still in storage (not to be made twice), and the made ones. */
  private readonly calling = new Set<number>();
  private called: number[] = [];
  /** Settles still delivering or calling owners: the last one to finish deletes what they finished. */
  private busy = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly env: Env,
    private readonly inboxId: string,
    private readonly callOwner: (end: JobEnd) => Promise<void>,
    /** The caller's clock offset from real time (the test clock), for the time a give-up is recorded at. */
    private readonly offsetMs: () => number,
  ) {}

  /** Writes the notice of a change to `row` (and the owner call, when the job ended). Synchronous. */
  record(
    row: JobRow,
    change: Omit<InboxNotice, "job_id" | "kind" | "owner" | "attempt" | "leased_by" | "at" | "runtime" | "employee_id" | "project_id"> & {
      at: number;
    },
  ): void {
    this.dropFinished();
    const notice: InboxNotice = {
      job_id: row.job_id,
      kind: row.kind,
      owner: JSON.parse(row.owner) as InboxNotice["owner"],
      attempt: row.attempt,
      leased_by: row.leased_by,
      ...change,
      at: new Date(change.at).toISOString(),
      // A completion carries what its cost ledger row needs (src/jobs/outcomes.ts); other notices stay as they were.
      ...(change.status === "completed"
        ? {
            runtime: row.runtime,
            ...(row.employee_id !== null ? { employee_id: row.employee_id } : {}),
            ...(row.project_id !== null ? { project_id: row.project_id } : {}),
          }
        : {}),
    };
    const text = JSON.stringify(notice);
    const { seq } = this.sql.exec<{ seq: number }>(`INSERT INTO outbox (notice) VALUES (?) RETURNING seq`, text).one();
    this.recorded++;
    this.freshNotices.push({ seq, notice, bytes: text.length });
    this.freshBytes += text.length;
    if (this.freshBytes > FRESH_NOTICE_BYTES) {
      // D1 has been away a while: storage alone keeps the backlog, and deliveries read it from there.
      this.freshNotices = [];
      this.freshBytes = 0;
      this.mayHaveStoredNotices = true;
    }
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
      this.fresh.set(seq, end);
    }
  }

  /** Mirrors what is pending to D1, then tells owners of ended jobs. */
  async deliver(): Promise<void> {
    this.busy++;
    try {
      if (this.mayHaveNotices()) await this.flush();
      if (this.fresh.size > 0 || this.mayHaveStoredCalls) await this.callOwners();
    } finally {
      // Under load the next change's write carries the deletes; the last settle of a burst makes them.
      if (--this.busy === 0) this.dropFinished();
    }
  }

  private mayHaveNotices(): boolean {
    return this.freshNotices.length > 0 || this.mayHaveStoredNotices;
  }

  /** Notices not yet in D1 (the `leases` tick reports them). */
  pending(): number {
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM outbox WHERE seq > ?`, this.deliveredThrough).one().n;
  }

  /** Deletes the notices D1 has and the owner calls made; called in a turn that writes anyway. */
  private dropFinished(): void {
    if (this.deliveredThrough > this.droppedThrough) {
      this.sql.exec(`DELETE FROM outbox WHERE seq <= ?`, this.deliveredThrough);
      this.droppedThrough = this.deliveredThrough;
    }
    if (this.called.length > 0) {
      this.sql.exec(`DELETE FROM owner_calls WHERE seq IN (SELECT value FROM json_each(?))`, JSON.stringify(this.called));
      for (const seq of this.called) this.calling.delete(seq);
      this.called = [];
    }
  }

  /** When the alarm must come back for this side (real ms), or null: an owner call's retry, undelivered notices. */
  nextDeadline(): number | null {
    const stored = this.mayHaveStoredCalls
      ? this.sql
          .exec<{ owner: number | null }>(
            `SELECT MIN(next_at) AS owner FROM owner_calls WHERE seq NOT IN (SELECT value FROM json_each(?))`,
            JSON.stringify([...this.calling, ...this.fresh.keys()]),
          )
          .one().owner
      : null;
    // A fresh call whose notice is in D1 is due now; one behind an undelivered notice waits for it.
    const [firstFresh] = this.fresh.keys();
    const candidates = [
      ...(stored !== null ? [stored] : []),
      ...(firstFresh !== undefined && firstFresh <= this.deliveredThrough ? [Date.now()] : []),
      ...(this.mayHaveNotices() ? [Date.now() + OUTBOX_RETRY_MS] : []),
    ];
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
        const next = this.mayHaveStoredNotices ? this.storedBatch() : this.freshBatch();
        if (next.batch.length === 0) break;
        const recordedBefore = this.recorded;
        await recordInboxNotices(getDb(this.env.DB), this.inboxId, next.batch);
        this.deliveredThrough = next.batch[next.batch.length - 1]!.seq;
        this.forgetDeliveredFresh();
        // Everything there was went, and nothing came while D1 was busy: the outbox is empty.
        if (next.all && this.recorded === recordedBefore) {
          this.mayHaveStoredNotices = false;
          break;
        }
      }
    } catch (err) {
      // Left in the outbox for the alarm to retry; the lease state itself is already safe.
      console.error("runner-inbox: outbox delivery failed", err);
    }
  }

  /** The next undelivered notices from storage; `all` when none is left behind them. */
  private storedBatch(): { batch: { seq: number; notice: InboxNotice }[]; all: boolean } {
    const rows = this.sql
      .exec<{ seq: number; notice: string }>(
        // Parameters through constant subqueries: a bound value in an ordered query's WHERE has SQLite
        // compile it anew on every run (docs/architecture.md "Hot-path SQL").
        `SELECT seq, notice FROM outbox WHERE seq > (SELECT ?1) ORDER BY seq LIMIT ${OUTBOX_BATCH}`,
        this.deliveredThrough,
      )
      .toArray();
    if (rows.length === 0) {
      // Storage holds nothing undelivered, so memory holds all that comes from now on.
      this.mayHaveStoredNotices = false;
      this.forgetDeliveredFresh();
    }
    const take = fitBatch(rows.map((r) => r.notice.length));
    return {
      batch: rows.slice(0, take).map((r) => ({ seq: r.seq, notice: JSON.parse(r.notice) as InboxNotice })),
      all: take === rows.length && rows.length < OUTBOX_BATCH,
    };
  }

  /** The next undelivered notices from memory (every one there is, while storage holds no other). */
  private freshBatch(): { batch: { seq: number; notice: InboxNotice }[]; all: boolean } {
    const fresh = this.freshNotices;
    const take = fitBatch(fresh.slice(0, OUTBOX_BATCH).map((n) => n.bytes));
    return { batch: fresh.slice(0, take), all: take === fresh.length };
  }

  private forgetDeliveredFresh(): void {
    let n = 0;
    while (n < this.freshNotices.length && this.freshNotices[n]!.seq <= this.deliveredThrough)
      this.freshBytes -= this.freshNotices[n++]!.bytes;
    if (n > 0) this.freshNotices = this.freshNotices.slice(n);
  }

  /**
   * Tells each ended job's owner, once its notice is in D1 (so the handler reads the final row).
   * A call is claimed in memory first, so concurrent settles in this object do not repeat it; a
   * failing handler is retried with backoff and, after OWNER_CALL_ATTEMPTS, recorded and dropped.
   */
  private async callOwners(): Promise<void> {
    const due: { seq: number; end: JobEnd; attempts: number }[] = [];
    // Fresh calls first, from memory: the notices up to deliveredThrough are all in D1.
    for (const [seq, end] of this.fresh) {
      if (seq > this.deliveredThrough || due.length >= OWNER_CALL_BATCH) break;
      due.push({ seq, end, attempts: 0 });
    }
    for (const call of due) {
      this.fresh.delete(call.seq);
      this.calling.add(call.seq);
    }
    if (this.mayHaveStoredCalls && due.length < OWNER_CALL_BATCH) {
      const stored = this.storedCallsDue(OWNER_CALL_BATCH - due.length);
      for (const call of stored) this.calling.add(call.seq);
      due.push(...stored);
    }
    for (const call of due) {
      try {
        await this.callOwner(call.end);
        this.called.push(call.seq);
      } catch (err) {
        console.error(`runner-inbox: owner handler for ${call.end.owner.kind}:${call.end.owner.id} (job ${call.end.job_id}) failed`, err);
        await this.afterFailedCall(call.seq, call.end, call.attempts + 1, err);
      }
    }
    if (this.mayHaveStoredCalls) this.noteStoredCallsLeft();
  }

  /** Due calls only storage knows (behind no undelivered notice), up to `limit`. */
  private storedCallsDue(limit: number): { seq: number; end: JobEnd; attempts: number }[] {
    return this.sql
      .exec<{ seq: number; job_end: string; attempts: number }>(
        `SELECT seq, job_end, attempts FROM owner_calls
         WHERE next_at <= (SELECT ?1) AND seq < (SELECT COALESCE(MIN(seq), 9e15) FROM outbox WHERE seq > (SELECT ?2))
         ORDER BY seq LIMIT (SELECT ?3)`,
        Date.now(),
        this.deliveredThrough,
        limit + this.calling.size + this.fresh.size,
      )
      .toArray()
      .filter((call) => !this.calling.has(call.seq) && !this.fresh.has(call.seq))
      .slice(0, limit)
      .map((call) => ({ seq: call.seq, end: JSON.parse(call.job_end) as JobEnd, attempts: call.attempts }));
  }

  private async afterFailedCall(seq: number, end: JobEnd, attempts: number, err: unknown): Promise<void> {
    try {
      if (attempts >= OWNER_CALL_ATTEMPTS) {
        try {
          await recordOwnerGaveUp(getDb(this.env.DB), end, attempts, String(err), new Date(Date.now() + this.offsetMs()));
          this.sql.exec(`DELETE FROM owner_calls WHERE seq = ?`, seq);
          return;
        } catch (recordErr) {
          console.error("runner-inbox: could not record the abandoned owner call; keeping it", recordErr);
        }
      }
      const backoff = Math.min(OWNER_CALL_MAX_BACKOFF_MS, 1_000 * 2 ** attempts);
      this.sql.exec(`UPDATE owner_calls SET attempts = ?, next_at = ? WHERE seq = ?`, attempts, Date.now() + backoff, seq);
      this.mayHaveStoredCalls = true;
    } finally {
      this.calling.delete(seq);
    }
  }

  /** Whether storage holds a call that is neither fresh nor being made (waiting for a retry, or behind a notice). */
  private noteStoredCallsLeft(): void {
    this.mayHaveStoredCalls = this.sql
      .exec<{ seq: number }>(`SELECT seq FROM owner_calls ORDER BY seq LIMIT (SELECT ?1)`, this.calling.size + this.fresh.size + 1)
      .toArray()
      .some((row) => !this.calling.has(row.seq) && !this.fresh.has(row.seq));
  }
}

/** How many notices (by their first `sizes`) one D1 batch takes: results can be large, so a byte bound too. */
function fitBatch(sizes: number[]): number {
  let bytes = 0;
  let take = 0;
  while (take < sizes.length && (take === 0 || bytes + sizes[take]! <= OUTBOX_BATCH_BYTES)) bytes += sizes[take++]!;
  return take;
}

const OUTBOX_RETRY_MS = 5_000;
/** Notices per D1 batch (one statement per table for them all, see `inboxNoticeStatements`), and a byte bound for large results. */
const OUTBOX_BATCH = 100;
const OUTBOX_BATCH_BYTES = 1_000_000;
const OUTBOX_ROUNDS = 3;
/** Undelivered notice text kept in memory; beyond it (D1 away a long while) deliveries read storage. */
const FRESH_NOTICE_BYTES = 4_000_000;
const OWNER_CALL_BATCH = 20;
const OWNER_CALL_ATTEMPTS = 8;
const OWNER_CALL_MAX_BACKOFF_MS = 5 * 60_000;
