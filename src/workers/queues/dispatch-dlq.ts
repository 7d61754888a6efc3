import { and, eq, notInArray } from "drizzle-orm";
import { getDb } from "../../db/client";
import { jobs } from "../../db/schema";
import type { Env } from "../../env";
import { loadClock } from "../../lib/clock";
import { heldJobsRouted, inboxLayout } from "../../jobs/inbox-routing";
import { appendEvent } from "../../lib/events";
import { notifyOwner } from "../owner-handlers";
import { dispatchMessage } from "../../queues/dispatch-message";

/**
 * Dead letters of `dispatch`: the job never reached a runner inbox. Its record is marked dead with
 * a reason instead of staying `queued` forever, so its owner learns it will not run.
 *
 * A message is also dead-lettered when the inbox took the job in but the consumer never saw its
 * call succeed (a lost reply): that job is not lost, it will run and the inbox reports on it, so it
 * is left alone. Asking the inbox first keeps "dead" from being told for a job that then completes.
 * If the inbox cannot answer, the batch throws and is retried.
 */
export async function consumeDispatchDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  const letters = batch.messages.map((msg) => ({ msg, parsed: dispatchMessage.safeParse(msg.body) }));
  const asked = letters.flatMap(({ parsed }) => (parsed.success ? [{ id: parsed.data.job_id, runtime: parsed.data.payload.runtime }] : []));
  const held = new Set(asked.length > 0 ? await heldJobsRouted(env, await inboxLayout(env), asked) : []);
  for (const { msg, parsed } of letters) {
    const jobId = parsed.success ? parsed.data.job_id : null;
    if (jobId && held.has(jobId)) {
      msg.ack();
      continue;
    }
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
    // Handlers are idempotent, so a redelivered dead letter tells the owner again rather than never;
    // a throw leaves the message unacknowledged and it is retried.
    const row = jobId ? await db.select().from(jobs).where(eq(jobs.id, jobId)).get() : undefined;
    if (row && parsed.success && row.status === "dead" && row.error?.code === "dispatch_failed") {
      await notifyOwner(env, {
        job_id: row.id,
        kind: row.kind,
        owner: parsed.data.owner,
        status: "dead",
        attempt: row.attempt,
        at: now.toISOString(),
        error,
        reason: "dispatch_failed",
      });
    }
    msg.ack();
  }
}
