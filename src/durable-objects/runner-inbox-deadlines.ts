import type { JobRow } from "./runner-inbox-schema";

/**
 * A lower bound, kept in memory, on the RunnerInbox's earliest deadline (a lease expiry, an ack
 * window, a queue-time limit; in the callers' clock time). The lazy checks run on every call, and
 * almost every call comes long before anything is due: with the bound they skip their three scans
 * and the alarm its MIN query (issue 26 item 5: a lease paid about fourteen SQLite statements).
 *
 * It is only ever too early, never too late: every write that sets a deadline lowers it, a check that
 * ran recomputes it from storage, and a deadline that went away (a completion) just leaves it early,
 * which costs one needless check. The alarm and the `leases` tick forget it and check in full, so a
 * write that did not lower it would still be caught within a tick.
 */
export class DeadlineBound {
  /** Clock ms; Infinity when nothing has a deadline; undefined when unknown (read it from storage). */
  private bound: number | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Whether anything may be due at `now`: false only when nothing is. */
  mayBeDue(now: number): boolean {
    return this.bound === undefined || now >= this.bound;
  }

  /** A write set a deadline at `at` (clock ms). */
  lower(at: number | null): void {
    if (at !== null && this.bound !== undefined && at < this.bound) this.bound = at;
  }

  /** A write returned this row: its live deadlines lower the bound. */
  noteRow(row: JobRow): void {
    if (row.status === "leased") this.lower(row.lease_expires_at);
    if (row.acked === 0) this.lower(row.ack_deadline);
    if (row.status === "queued") this.lower(row.queue_deadline);
  }

  /** Forgets the bound: the next check scans in full. */
  forget(): void {
    this.bound = undefined;
  }

  /** The bound, read from storage when unknown: the earliest deadline, or null when none. */
  earliest(): number | null {
    if (this.bound === undefined) this.bound = this.read() ?? Infinity;
    return Number.isFinite(this.bound) ? this.bound : null;
  }

  /** Reads the exact earliest deadline from storage (after a check changed what is due). */
  recompute(): void {
    this.bound = this.read() ?? Infinity;
  }

  private read(): number | null {
    const { lease, ack, queue } = this.sql
      .exec<{ lease: number | null; ack: number | null; queue: number | null }>(
        `SELECT (SELECT MIN(lease_expires_at) FROM jobs WHERE status = 'leased') AS lease,
                (SELECT MIN(ack_deadline) FROM jobs WHERE acked = 0) AS ack,
                (SELECT MIN(queue_deadline) FROM jobs WHERE status = 'queued') AS queue`,
      )
      .one();
    const known = [lease, ack, queue].filter((t): t is number => t !== null);
    return known.length > 0 ? Math.min(...known) : null;
  }
}
