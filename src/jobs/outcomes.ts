import { and, asc, eq, fillPlaceholders, lt, ne, sql, type Query } from "drizzle-orm";
import type { Db } from "../db/client";
import { events, jobAttempts, jobs, type AttemptStatus, type JobStatus } from "../db/schema";
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
}

const TERMINAL: ReadonlySet<JobStatus> = new Set(["completed", "failed", "dead"]);

/**
 * The three statements a notice makes, as SQL built once per isolate through drizzle with named
 * placeholders and bound per notice (JSON columns are bound as the text drizzle would write, and a
 * missing value as NULL): building them through drizzle's query builder on every
 * delivery was about a fifth of a lease's CPU in a profile (issue 26 item 5).
 */
interface NoticeQueries {
  job: Query;
  event: Query;
  attempt: Query;
}
const built = new WeakMap<Db, NoticeQueries>();

function noticeQueries(db: Db): NoticeQueries {
  let queries = built.get(db);
  if (queries) return queries;
  const p = (name: string) => sql.placeholder(name);
  const attemptValues = {
    runnerId: p("runner_id"),
    status: p("attempt_status"),
    error: sql`${p("attempt_error")}`,
    startedAt: p("started_at"),
    endedAt: p("ended_at"),
    inboxSeq: p("seq"),
  };
  queries = {
    job: db
      .update(jobs)
      .set({
        status: sql`${p("status")}`,
        attempt: sql`${p("attempt")}`,
        leasedBy: sql`${p("leased_by")}`,
        result: sql`${p("result")}`,
        error: sql`${p("error")}`,
        updatedAt: sql`${p("at")}`,
        finishedAt: sql`${p("finished_at")}`,
        inboxSeq: sql`${p("seq")}`,
      })
      .where(and(eq(jobs.id, p("job_id")), lt(jobs.inboxSeq, p("seq"))))
      .toSQL(),
    // The row `appendEvent` writes, with its dedupe key.
    event: db
      .insert(events)
      .values({ type: p("type"), subject: p("job_id"), payload: sql`${p("payload")}`, createdAt: p("at"), dedupeKey: p("dedupe_key") })
      .onConflictDoNothing({ target: events.dedupeKey })
      .toSQL(),
    attempt: db
      .insert(jobAttempts)
      .values({ jobId: p("job_id"), attempt: p("attempt_number"), ...attemptValues })
      .onConflictDoUpdate({
        target: [jobAttempts.jobId, jobAttempts.attempt],
        set: {
          runnerId: sql`excluded.runner_id`,
          status: sql`excluded.status`,
          error: sql`excluded.error`,
          startedAt: sql`excluded.started_at`,
          endedAt: sql`excluded.ended_at`,
          inboxSeq: sql`excluded.inbox_seq`,
        },
        setWhere: lt(jobAttempts.inboxSeq, sql`excluded.inbox_seq`),
      })
      .toSQL(),
  };
  built.set(db, queries);
  return queries;
}

const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

function bind(db: Db, query: Query, values: Record<string, unknown>): D1PreparedStatement {
  return db.$client.prepare(query.sql).bind(...fillPlaceholders(query.params, values));
}

/**
 * Applies inbox notices to the `jobs` row, its attempt history and the events feed in one atomic
 * batch. Re-delivery and overlapping deliveries are harmless: a row only moves forward in seq, and
 * each event is keyed by its outbox seq. The row's `result` and `error` describe its current state
 * only (a retried failure's error lives on in the attempt history, not beside a later result).
 */
export function inboxNoticeStatements(db: Db, inboxId: string, notices: { seq: number; notice: InboxNotice }[]): D1PreparedStatement[] {
  const queries = noticeQueries(db);
  const statements: D1PreparedStatement[] = [];
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
    statements.push(
      bind(db, queries.job, {
        job_id: notice.job_id,
        seq,
        status: notice.status,
        attempt: notice.attempt,
        leased_by: notice.leased_by,
        result: json(notice.result),
        error: json(notice.error),
        at: notice.at,
        finished_at: TERMINAL.has(notice.status) ? notice.at : null,
      }),
      bind(db, queries.event, {
        type: notice.type,
        job_id: notice.job_id,
        payload: JSON.stringify(payload),
        at: notice.at,
        dedupe_key: `inbox:${inboxId}:${seq}`,
      }),
    );
    const record = notice.attempt_record;
    if (record) {
      statements.push(
        bind(db, queries.attempt, {
          job_id: notice.job_id,
          attempt_number: record.attempt,
          runner_id: record.runner_id,
          attempt_status: record.status,
          attempt_error: json(record.error),
          started_at: record.started_at,
          ended_at: record.ended_at,
          seq,
        }),
      );
    }
  }
  return statements;
}

export async function recordInboxNotices(db: Db, inboxId: string, notices: { seq: number; notice: InboxNotice }[]) {
  const statements = inboxNoticeStatements(db, inboxId, notices);
  if (statements.length === 0) return;
  await db.$client.batch(statements);
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
