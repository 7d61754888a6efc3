import { and, eq, notInArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { jobs } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { appendEvent } from "../lib/events";
import { dispatchMessage } from "./dispatch-message";

/**
 * Dead letters of `dispatch`: the job never reached a runner inbox. Its record is marked dead with
 * a reason instead of staying `queued` forever, so its owner learns it will not run.
 */
export async function consumeDispatchDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  for (const msg of batch.messages) {
    const parsed = dispatchMessage.safeParse(msg.body);
    const jobId = parsed.success ? parsed.data.job_id : null;
    const error = { code: "dispatch_failed", message: `the job could not be handed to a runner inbox after ${msg.attempts} deliveries` };
    await db.batch([
      db
        .update(jobs)
        .set({ status: "dead", error, updatedAt: now.toISOString(), finishedAt: now.toISOString() })
        .where(and(eq(jobs.id, jobId ?? ""), notInArray(jobs.status, ["completed", "failed", "dead"]))),
      appendEvent(
        db,
        {
          type: "job.dead",
          subject: jobId ?? msg.id,
          payload: { job_id: jobId, message_id: msg.id, reason: "dispatch_failed", error },
          dedupeKey: `dlq:${msg.id}`,
        },
        now,
      ),
    ]);
    msg.ack();
  }
}
