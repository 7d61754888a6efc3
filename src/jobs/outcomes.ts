import { and, asc, eq, lt, ne, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { named, preparedOnce } from "../db/prepared";
import { jobAttempts, jobs, type AttemptStatus, type JobStatus } from "../db/schema";
import { appendEvent, appendEventPrepared } from "../lib/events";
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
 * A notice's row update and attempt upsert, built once per isolate and bound per notice (its event is
 * `appendEventPrepared`). JSON columns are bound as the text drizzle would write, a missing value as NULL.
 */
const updateJobRow = preparedOnce((db) =>
  db
    .update(jobs)
    .set({
      status: sql`${named("status")}`,
      attempt: sql`${named("attempt")}`,
      leasedBy: sql`${named("leased_by")}`,
      result: sql`${named("result")}`,
      error: sql`${named("error")}`,
      updatedAt: sql`${named("at")}`,
      finishedAt: sql`${named("finished_at")}`,
      inboxSeq: sql`${named("seq")}`,
    })
    .where(and(eq(jobs.id, named("job_id")), lt(jobs.inboxSeq, named("seq")))),
);

const upsertAttempt = preparedOnce((db) =>
  db
    .insert(jobAttempts)
    .values({
      jobId: named("job_id"),
      attempt: named("attempt_number"),
      runnerId: named("runner_id"),
      status: named("attempt_status"),
      error: sql`${named("attempt_error")}`,
      startedAt: named("started_at"),
      endedAt: named("ended_at"),
      inboxSeq: named("seq"),
    })
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
    }),
);

const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

/**
 * Applies inbox notices to the `jobs` row, its attempt history and the events feed in one atomic
 * batch. Re-delivery and overlapping deliveries are harmless: a row only moves forward in seq, and
 * each event is keyed by its outbox seq. The row's `result` and `error` describe its current state
 * only (a retried failure's error lives on in the attempt history, not beside a later result).
 */
export function inboxNoticeStatements(db: Db, inboxId: string, notices: { seq: number; notice: InboxNotice }[]): D1PreparedStatement[] {
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
      updateJobRow(db, {
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
      appendEventPrepared(db, {
        type: notice.type,
        subject: notice.job_id,
        payload: JSON.stringify(payload),
        created_at: notice.at,
        dedupe_key: `inbox:${inboxId}:${seq}`,
      }),
    );
    const record = notice.attempt_record;
    if (record) {
      statements.push(
        upsertAttempt(db, {
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
