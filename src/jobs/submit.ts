import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { events, jobs } from "../db/schema";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { DispatchMessage } from "../queues/dispatch-message";
import type { JobOwner, UtilityPayload } from "./payloads";

export interface NewJob {
  kind: "utility";
  payload: UtilityPayload;
  owner: JobOwner;
}

/**
 * Records the job, then hands it to the `dispatch` queue. If the queue refuses it the record and
 * its event are removed again, so a failed submission leaves nothing behind.
 */
export async function submitJob(env: Pick<Env, "DISPATCH">, db: Db, job: NewJob, now: Date): Promise<{ job_id: string }> {
  const jobId = newId("job");
  const at = now.toISOString();
  const queuedKey = `job:${jobId}:queued`;
  await db.batch([
    db.insert(jobs).values({
      id: jobId,
      kind: job.kind,
      runtime: job.payload.runtime,
      status: "queued",
      ownerKind: job.owner.kind,
      ownerId: job.owner.id,
      payload: job.payload,
      attempt: 0,
      createdAt: at,
      updatedAt: at,
    }),
    appendEvent(
      db,
      {
        type: "job.queued",
        subject: jobId,
        payload: { job_id: jobId, kind: job.kind, runtime: job.payload.runtime, owner: job.owner },
        dedupeKey: queuedKey,
      },
      now,
    ),
  ]);
  const message: DispatchMessage = { job_id: jobId, kind: job.kind, payload: job.payload, owner: job.owner, enqueued_at: at };
  try {
    await env.DISPATCH.send(message, { contentType: "json" });
  } catch (cause) {
    await db.batch([db.delete(jobs).where(eq(jobs.id, jobId)), db.delete(events).where(eq(events.dedupeKey, queuedKey))]);
    throw new AppError("unavailable", "The dispatch queue did not accept the job; nothing was recorded", { cause });
  }
  return { job_id: jobId };
}

export function findJob(db: Db, jobId: string) {
  return db.select().from(jobs).where(eq(jobs.id, jobId)).get();
}
