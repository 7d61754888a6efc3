import { getDb } from "../../db/client";
import type { Env } from "../../env";
import { loadClock } from "../../lib/clock";
import { readSectionCached } from "../../lib/config";
import { appendEvent } from "../../lib/events";
import { runnerConfig } from "../../jobs/config";
import { enqueueRouted, inboxLayout } from "../../jobs/inbox-routing";
import { dispatchMessage, type DispatchMessage } from "../../queues/dispatch-message";

/**
 * `dispatch` consumer: validates each message and puts the batch's jobs into their runner inboxes,
 * one call per inbox (a job's runtime pool, or its shard: `src/jobs/inbox-pools.ts`; an inbox
 * ignores a job it already holds and a job always maps to the same inbox, so a redelivered batch is
 * harmless). A message
 * that does not parse is acknowledged and recorded (retrying cannot fix it); a failing inbox call is
 * retried, and after the queue's max_retries the message lands in the dead-letter queue.
 */
export async function consumeDispatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const clock = await loadClock(env);
  const [config, layout] = await Promise.all([readSectionCached(db, runnerConfig), inboxLayout(env)]);
  const valid: { msg: Message<unknown>; message: DispatchMessage }[] = [];
  for (const msg of batch.messages) {
    const parsed = dispatchMessage.safeParse(msg.body);
    if (parsed.success) {
      valid.push({ msg, message: parsed.data });
      continue;
    }
    await appendEvent(
      db,
      {
        type: "dispatch.rejected",
        subject: msg.id,
        payload: { message_id: msg.id, issues: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) },
      },
      clock.now(),
    );
    msg.ack();
  }
  if (valid.length === 0) return;
  try {
    await enqueueRouted(env, layout, {
      messages: valid.map((v) => v.message),
      maxAttempts: config.max_attempts,
      maxQueueMs: config.max_queue_ms,
      now: clock.nowMs(),
    });
    for (const v of valid) v.msg.ack();
  } catch (err) {
    console.error("dispatch: inbox enqueue failed; will retry", valid.map((v) => v.msg.id).join(","), err);
    for (const v of valid) v.msg.retry();
  }
}
