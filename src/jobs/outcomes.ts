import { and, asc, eq, lt, ne } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { jobAttempts, jobs, type AttemptStatus, type JobStatus } from "../db/schema";
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
 * Applies inbox notices to the `jobs` row, its attempt history and the events feed in one atomic
 * batch. Re-delivery and overlapping deliveries are harmless: a row only moves forward in seq, and
 * each event is keyed by its outbox seq. The row's `result` and `error` describe its current state
 * only (a retried failure's error lives on in the attempt history, not beside a later result).
 */
export function inboxNoticeStatements(db: Db, inboxId: string, notices: { seq: number; notice: InboxNotice }[]): BatchItem<"sqlite">[] {
  const statements: BatchItem<"sqlite">[] = [];
  for (const { seq, notice } of notices) {
    statements.push(
      db
        .update(jobs)
        .set({
          status: notice.status,
          attempt: notice.attempt,
          leasedBy: notice.leased_by,
          result: notice.result ?? null,
          error: notice.error ?? null,
          updatedAt: notice.at,
          finishedAt: TERMINAL.has(notice.status) ? notice.at : null,
          inboxSeq: seq,
        })
        .where(and(eq(jobs.id, notice.job_id), lt(jobs.inboxSeq, seq))),
      appendEvent(
        db,
        {
          type: notice.type,
          subject: notice.job_id,
          payload: {
            job_id: notice.job_id,
            kind: notice.kind,
            owner: notice.owner,
            status: notice.status,
            attempt: notice.attempt,
            ...(notice.leased_by ? { leased_by: notice.leased_by } : {}),
            ...(notice.reason ? { reason: notice.reason } : {}),
            ...(notice.error ? { error: notice.error } : {}),
          },
          dedupeKey: `inbox:${inboxId}:${seq}`,
        },
        new Date(notice.at),
      ),
    );
    const record = notice.attempt_record;
    if (record) {
      const values = {
        runnerId: record.runner_id,
        status: record.status,
        error: record.error ?? null,
        startedAt: record.started_at,
        endedAt: record.ended_at,
        inboxSeq: seq,
      };
      statements.push(
        db
          .insert(jobAttempts)
          .values({ jobId: notice.job_id, attempt: record.attempt, ...values })
          .onConflictDoUpdate({
            target: [jobAttempts.jobId, jobAttempts.attempt],
            set: values,
            setWhere: lt(jobAttempts.inboxSeq, seq),
          }),
      );
    }
  }
  return statements;
}

export async function recordInboxNotices(db: Db, inboxId: string, notices: { seq: number; notice: InboxNotice }[]) {
  const statements = inboxNoticeStatements(db, inboxId, notices);
  if (statements.length === 0) return;
  await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
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
