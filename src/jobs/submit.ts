import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { named, preparedOnce } from "../db/prepared";
import { events, jobs } from "../db/schema";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { appendEvent, appendEventPrepared } from "../lib/events";
import { newId } from "../lib/ids";
import type { DispatchMessage } from "../queues/dispatch-message";
import { dispatchBatcher, type Defer } from "./dispatch-batcher";

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

/** `prepareJob`'s job row, built once per isolate and bound per job (`submitJob`'s hot path; its event is `appendEventPrepared`). */
const insertQueuedJob = preparedOnce((db) =>
  db.insert(jobs).values({
    id: named("job_id"),
    kind: named("kind"),
    runtime: named("runtime"),
    status: "queued",
    ownerKind: named("owner_kind"),
    ownerId: named("owner_id"),
    payload: sql`${named("payload")}`,
    attempt: 0,
    createdAt: named("at"),
    updatedAt: named("at"),
  }),
);

/** Hands a recorded job to the `dispatch` queue. */
export async function dispatchJob(env: Pick<Env, "DISPATCH">, message: DispatchMessage): Promise<void> {
  await env.DISPATCH.send(message, { contentType: "json" });
}

/**
 * Records the job, then hands it to the `dispatch` queue. Without `defer`, if the queue refuses it
 * the record and its event are removed again, so a failed submission leaves nothing behind.
 *
 * With `defer` (a request's `waitUntil`) the message goes after the answer, in one `sendBatch` with
 * the isolate's other submissions (`dispatchBatcher`): the recorded row is then the outbox, and a
 * message never sent is sent from it by the reconciler, so the job is accepted once recorded.
 */
export async function submitJob(
  env: Pick<Env, "DISPATCH">,
  db: Db,
  job: NewJob,
  now: Date,
  options: { defer?: Defer } = {},
): Promise<{ job_id: string }> {
  const jobId = newId("job");
  const at = now.toISOString();
  // The rows prepareJob's statements write (a test holds them equal), bound to SQL built once.
  await db.$client.batch([
    insertQueuedJob(db, {
      job_id: jobId,
      kind: job.kind,
      runtime: job.payload.runtime,
      owner_kind: job.owner.kind,
      owner_id: job.owner.id,
      payload: JSON.stringify(job.payload),
      at,
    }),
    appendEventPrepared(db, {
      type: "job.queued",
      subject: jobId,
      payload: JSON.stringify(queuedPayload(jobId, job)),
      created_at: at,
      dedupe_key: queuedKey(jobId),
    }),
  ]);
  const message = { ...job, job_id: jobId, enqueued_at: at } as DispatchMessage;
  if (options.defer) {
    dispatchBatcher.dispatch(env, message, options.defer);
    return { job_id: jobId };
  }
  try {
    await dispatchJob(env, message);
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
