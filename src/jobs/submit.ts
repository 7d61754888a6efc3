import { eq, fillPlaceholders, sql, type Query } from "drizzle-orm";
import type { Db } from "../db/client";
import { events, jobs } from "../db/schema";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { DispatchMessage } from "../queues/dispatch-message";

/**
 * What a D1 job row keeps in place of a secret its payload carried (a member token): the row never
 * holds it, so a job rebuilt from its row (the reconciler) can never run with it.
 */
export const REDACTED_SECRET = "[redacted]";

/** A job as a feature asks for it: kind, payload (with its runtime) and the owner to tell when it ends. */
export type NewJob = Omit<DispatchMessage, "job_id" | "enqueued_at">;

export interface PreparedJob {
  jobId: string;
  /** The job row and its `job.queued` event, for the caller's own `db.batch([...])`. */
  statements: [ReturnType<typeof insertJobRow>, ReturnType<typeof appendEvent>];
  message: DispatchMessage;
}

function insertJobRow(db: Db, jobId: string, job: NewJob, at: string, rowPayload?: Record<string, unknown>) {
  return db.insert(jobs).values({
    id: jobId,
    kind: job.kind,
    runtime: job.payload.runtime,
    status: "queued",
    ownerKind: job.owner.kind,
    ownerId: job.owner.id,
    payload: rowPayload ?? (job.payload as Record<string, unknown>),
    attempt: 0,
    createdAt: at,
    updatedAt: at,
  });
}

/**
 * The statements that record a job, so a feature can land the job and its own state change in one
 * atomic batch (then `dispatchJob`). `jobId` may be chosen by the caller to reference it in its rows.
 */
export function prepareJob(
  db: Db,
  job: NewJob,
  now: Date,
  jobId: string = newId("job"),
  /** What the D1 row keeps of the payload when it carries a secret (a member token) the row must not. */
  options: { rowPayload?: Record<string, unknown> } = {},
): PreparedJob {
  const at = now.toISOString();
  return {
    jobId,
    statements: [
      insertJobRow(db, jobId, job, at, options.rowPayload),
      appendEvent(db, { type: "job.queued", subject: jobId, payload: queuedPayload(jobId, job), dedupeKey: queuedKey(jobId) }, now),
    ],
    message: { ...job, job_id: jobId, enqueued_at: at } as DispatchMessage,
  };
}

function queuedPayload(jobId: string, job: NewJob) {
  return { job_id: jobId, kind: job.kind, runtime: job.payload.runtime, owner: job.owner };
}

/**
 * `prepareJob`'s two rows as SQL built once per isolate through drizzle with placeholders, bound per
 * job: for a submission that records nothing else (`submitJob`), where building the statements
 * through drizzle's query builder on every request was about a tenth of its CPU (issue 26 item 5).
 * JSON columns are bound as the text drizzle would write.
 */
const queuedQueries = new WeakMap<Db, { job: Query; event: Query }>();

function queuedJobStatements(db: Db, jobId: string, job: NewJob, at: string): D1PreparedStatement[] {
  let queries = queuedQueries.get(db);
  if (!queries) {
    const p = (name: string) => sql.placeholder(name);
    queries = {
      job: db
        .insert(jobs)
        .values({
          id: p("job_id"),
          kind: p("kind"),
          runtime: p("runtime"),
          status: "queued",
          ownerKind: p("owner_kind"),
          ownerId: p("owner_id"),
          payload: sql`${p("payload")}`,
          attempt: 0,
          createdAt: p("at"),
          updatedAt: p("at"),
        })
        .toSQL(),
      event: db
        .insert(events)
        .values({ type: "job.queued", subject: p("job_id"), payload: sql`${p("event")}`, createdAt: p("at"), dedupeKey: p("dedupe_key") })
        .onConflictDoNothing({ target: events.dedupeKey })
        .toSQL(),
    };
    queuedQueries.set(db, queries);
  }
  const values = {
    job_id: jobId,
    kind: job.kind,
    runtime: job.payload.runtime,
    owner_kind: job.owner.kind,
    owner_id: job.owner.id,
    payload: JSON.stringify(job.payload),
    at,
    event: JSON.stringify(queuedPayload(jobId, job)),
    dedupe_key: queuedKey(jobId),
  };
  return [queries.job, queries.event].map((q) => db.$client.prepare(q.sql).bind(...fillPlaceholders(q.params, values)));
}

/** Hands a recorded job to the `dispatch` queue. */
export async function dispatchJob(env: Pick<Env, "DISPATCH">, message: DispatchMessage): Promise<void> {
  await env.DISPATCH.send(message, { contentType: "json" });
}

/**
 * Records the job, then hands it to the `dispatch` queue. If the queue refuses it the record and
 * its event are removed again, so a failed submission leaves nothing behind.
 */
export async function submitJob(env: Pick<Env, "DISPATCH">, db: Db, job: NewJob, now: Date): Promise<{ job_id: string }> {
  const jobId = newId("job");
  const at = now.toISOString();
  await db.$client.batch(queuedJobStatements(db, jobId, job, at));
  try {
    await dispatchJob(env, { ...job, job_id: jobId, enqueued_at: at } as DispatchMessage);
  } catch (cause) {
    await db.batch([db.delete(jobs).where(eq(jobs.id, jobId)), db.delete(events).where(eq(events.dedupeKey, queuedKey(jobId)))]);
    throw new AppError("unavailable", "The dispatch queue did not accept the job; nothing was recorded", { cause });
  }
  return { job_id: jobId };
}

function queuedKey(jobId: string) {
  return `job:${jobId}:queued`;
}

export function findJob(db: Db, jobId: string) {
  return db.select().from(jobs).where(eq(jobs.id, jobId)).get();
}
