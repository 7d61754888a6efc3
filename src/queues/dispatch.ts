import { getDb } from "../db/client";
import { getRunnerInbox } from "../durable-objects/runner-inbox";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { readSection } from "../lib/config";
import { appendEvent } from "../lib/events";
import { runnerConfig } from "../jobs/config";
import { dispatchMessage } from "./dispatch-message";

/**
 * `dispatch` consumer: validates each message and puts the job into the runner inbox. A message
 * that does not parse is acknowledged and recorded (retrying cannot fix it); a failing inbox call
 * is retried, and after the queue's max_retries the message lands in the dead-letter queue.
 */
export async function consumeDispatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const clock = await loadClock(env);
  const config = await readSection(db, runnerConfig);
  for (const msg of batch.messages) {
    const parsed = dispatchMessage.safeParse(msg.body);
    if (!parsed.success) {
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
      continue;
    }
    try {
      await getRunnerInbox(env).enqueue({
        message: parsed.data,
        maxAttempts: config.max_attempts,
        maxQueueMs: config.max_queue_ms,
        now: clock.nowMs(),
      });
      msg.ack();
    } catch (err) {
      console.error("dispatch: inbox enqueue failed; will retry", msg.id, err);
      msg.retry();
    }
  }
}
