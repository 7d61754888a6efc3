import { and, asc, eq, ne } from "drizzle-orm";
import type { Db } from "../db/client";
import { costItemOf, INSERT_COST_ENTRIES, rememberDelivery, UPSERT_SPEND_TOTALS, type CostItem, type SpendTotal } from "./spend-totals";
import { jobAttempts, type AttemptStatus, type JobStatus } from "../db/schema";
import { appendEvent } from "../lib/events";
import type { JobEnd } from "./job-end";
import type { JobError, JobOwner } from "./payloads";

export const JOB_EVENT_TYPES = ["job.queued", "job.leased", "job.requeued", "job.completed", "job.failed", "job.dead"] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

/** One lease a job took: started when leased, ended by the notice that carries it. */
export interface AttemptRecord {
  attempt: number;
  runner_id: string | null;
  status: AttemptStatus;
  started_at: string;
  ended_at: string | null;
  error?: JobError;
}

/** One change of a job inside the RunnerInbox, as carried by its outbox to D1. */
export interface InboxNotice {
  job_id: string;
  kind: string;
  owner: JobOwner;
  type: Exclude<JobEventType, "job.queued">;
  status: JobStatus;
  attempt: number;
  leased_by: string | null;
  at: string;
  reason?: string;
  error?: JobError;
  result?: Record<string, unknown>;
  /** The lease this change started or ended, for the job's attempt history. */
  attempt_record?: AttemptRecord;
  /**
   * On a completion only, for its cost ledger row (docs/spend.md): the job's runtime, and whose work
   * it was (the inbox's `jobAttribution`), when it names them.
   */
  runtime?: string;
  employee_id?: string;
  project_id?: string;
}

const TERMINAL: ReadonlySet<JobStatus> = new Set(["completed", "failed", "dead"]);

/**
 * A delivery's statements, one per table however many notices it carries (issue 26 item 5: with three
 * statements per notice, the D1 client was 8% of the Worker's CPU under runner load; 7% after, and
 * less for D1 to plan and run). Each reads its rows from a JSON array bound as ?1, in the order
 * given. Written as SQL: drizzle cannot build an UPDATE … FROM json_each.
 *
 * The row takes each job's newest notice only: every notice sets every column it updates, so the
 * newest alone is what applying them in order would leave; `inbox_seq` keeps an older delivery
 * arriving late from moving it back. SQLite takes the bare columns from the row MAX() picked.
 */
const UPDATE_JOB_ROWS = `UPDATE jobs SET status = n.status, attempt = n.attempt, leased_by = n.leased_by, result = n.result, error = n.error,
    updated_at = n.at, finished_at = n.finished_at, inbox_seq = n.seq
  FROM (SELECT value ->> 'job_id' AS job_id, MAX(value ->> 'seq') AS seq, value ->> 'status' AS status, value ->> 'attempt' AS attempt,
          value ->> 'leased_by' AS leased_by, value ->> 'result' AS result, value ->> 'error' AS error, value ->> 'at' AS at,
          value ->> 'finished_at' AS finished_at
        FROM json_each(?1) GROUP BY 1) AS n
  WHERE jobs.id = n.job_id AND jobs.inbox_seq < n.seq`;

/** One event per notice, each once (keyed by its outbox seq), in seq order. "WHERE true" lets SQLite parse the upsert. */
const APPEND_EVENTS = `INSERT INTO events (type, subject, payload, created_at, dedupe_key)
  SELECT value ->> 'type', value ->> 'subject', value ->> 'payload', value ->> 'at', value ->> 'dedupe_key'
  FROM json_each(?1) WHERE true ORDER BY key
  ON CONFLICT (dedupe_key) DO NOTHING`;

/** The attempt records, in seq order: a later notice of the same attempt (in this batch or after) overwrites an earlier one. */
const UPSERT_ATTEMPTS = `INSERT INTO job_attempts (job_id, attempt, runner_id, status, error, started_at, ended_at, inbox_seq)
  SELECT value ->> 'job_id', value ->> 'attempt', value ->> 'runner_id', value ->> 'status', value ->> 'error', value ->> 'started_at',
    value ->> 'ended_at', value ->> 'seq'
  FROM json_each(?1) WHERE true ORDER BY key
  ON CONFLICT (job_id, attempt) DO UPDATE SET runner_id = excluded.runner_id, status = excluded.status, error = excluded.error,
    started_at = excluded.started_at, ended_at = excluded.ended_at, inbox_seq = excluded.inbox_seq
  WHERE job_attempts.inbox_seq < excluded.inbox_seq`;

const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

/**
 * Applies inbox notices to the `jobs` row, its attempt history and the events feed in one atomic
 * batch. Re-delivery and overlapping deliveries are harmless: a row only moves forward in seq, and
 * each event is keyed by its outbox seq. The row's `result` and `error` describe its current state
 * only (a retried failure's error lives on in the attempt history, not beside a later result).
 */
export function inboxNoticeStatements(
  db: Db,
  inboxId: string,
  notices: { seq: number; notice: InboxNotice }[],
): { statements: D1PreparedStatement[]; costs: CostItem[]; totalsAt: number; totalsCount: number } {
  if (notices.length === 0) return { statements: [], costs: [], totalsAt: 0, totalsCount: 0 };
  const rows: Record<string, unknown>[] = [];
  const events: Record<string, unknown>[] = [];
  const attempts: Record<string, unknown>[] = [];
  const costs: CostItem[] = [];
  for (const { seq, notice } of notices) {
    const payload = {
      job_id: notice.job_id,
      kind: notice.kind,
      owner: notice.owner,
      status: notice.status,
      attempt: notice.attempt,
      ...(notice.leased_by ? { leased_by: notice.leased_by } : {}),
      ...(notice.reason ? { reason: notice.reason } : {}),
      ...(notice.error ? { error: notice.error } : {}),
    };
    rows.push({
      job_id: notice.job_id,
      seq,
      status: notice.status,
      attempt: notice.attempt,
      leased_by: notice.leased_by,
      result: json(notice.result),
      error: json(notice.error),
      at: notice.at,
      finished_at: TERMINAL.has(notice.status) ? notice.at : null,
    });
    events.push({
      type: notice.type,
      subject: notice.job_id,
      payload: JSON.stringify(payload),
      at: notice.at,
      dedupe_key: `inbox:${inboxId}:${seq}`,
    });
    const cost = costItemOf(notice);
    // One completion notice per job; a second in one delivery (never expected) must not count twice.
    if (cost && !costs.some((c) => c.job_id === cost.job_id)) costs.push(cost);
    const record = notice.attempt_record;
    if (record) {
      attempts.push({
        job_id: notice.job_id,
        attempt: record.attempt,
        runner_id: record.runner_id,
        status: record.status,
        error: json(record.error),
        started_at: record.started_at,
        ended_at: record.ended_at,
        seq,
      });
    }
  }
  const d1 = db.$client;
  const statements = (sql: string, items: readonly Record<string, unknown>[]) =>
    jsonArrayChunks(items).map((chunk) => d1.prepare(sql).bind(chunk));
  const before = [...statements(UPDATE_JOB_ROWS, rows), ...statements(APPEND_EVENTS, events), ...statements(UPSERT_ATTEMPTS, attempts)];
  // The spend (docs/spend.md): totals first (they count only jobs the ledger lacks), then the ledger rows.
  const totals = statements(UPSERT_SPEND_TOTALS, costs);
  return {
    statements: [...before, ...totals, ...statements(INSERT_COST_ENTRIES, costs)],
    costs,
    totalsAt: before.length,
    totalsCount: totals.length,
  };
}

/**
 * `items` as JSON arrays of at most ~1 MB each (one, unless results are large): a bound value must
 * stay under D1's 2 MB string limit. Sizes are counted at three bytes per character, the most a
 * character takes in UTF-8, so no encoding is needed to know; a chunk holds at least one item (a
 * result is at most 512 KB, which JSON's escaping can double).
 */
function jsonArrayChunks(items: readonly Record<string, unknown>[]): string[] {
  const chunks: string[] = [];
  let parts: string[] = [];
  let bytes = 0;
  for (const item of items) {
    const text = JSON.stringify(item);
    if (parts.length > 0 && bytes + 3 * text.length > CHUNK_BYTES) {
      chunks.push(`[${parts.join(",")}]`);
      parts = [];
      bytes = 0;
    }
    parts.push(text);
    bytes += 3 * text.length;
  }
  if (parts.length > 0) chunks.push(`[${parts.join(",")}]`);
  return chunks;
}

const CHUNK_BYTES = 1_000_000;

export async function recordInboxNotices(db: Db, inboxId: string, notices: { seq: number; notice: InboxNotice }[]): Promise<void> {
  const { statements, costs, totalsAt, totalsCount } = inboxNoticeStatements(db, inboxId, notices);
  if (statements.length === 0) return;
  const results = await db.$client.batch(statements);
  if (costs.length > 0) {
    const returned = results.slice(totalsAt, totalsAt + totalsCount).flatMap((r) => r.results as SpendTotal[]);
    rememberDelivery(costs, returned);
  }
}

/** A job's counted attempts, oldest first (claims that never reached a live runner are left out). */
export async function listAttempts(db: Db, jobId: string): Promise<AttemptRecord[]> {
  const rows = await db
    .select()
    .from(jobAttempts)
    .where(and(eq(jobAttempts.jobId, jobId), ne(jobAttempts.status, "released")))
    .orderBy(asc(jobAttempts.attempt));
  return rows.map((r) => ({
    attempt: r.attempt,
    runner_id: r.runnerId,
    status: r.status,
    started_at: r.startedAt,
    ended_at: r.endedAt,
    ...(r.error ? { error: r.error } : {}),
  }));
}

/** An owner handler kept failing: the job's end is recorded as never acted upon, for an operator. */
export async function recordOwnerGaveUp(db: Db, end: JobEnd, attempts: number, error: string, at: Date) {
  await appendEvent(
    db,
    {
      type: "job.owner_unhandled",
      subject: end.job_id,
      payload: { job_id: end.job_id, owner: end.owner, status: end.status, attempts, error: error.slice(0, 1_000) },
      dedupeKey: `owner_unhandled:${end.job_id}:${end.status}:${end.attempt}`,
    },
    at,
  );
}
