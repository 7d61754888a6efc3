import { getDb } from "../../db/client";
import type { Env } from "../../env";
import { loadClock } from "../../lib/clock";
import { appendEvent } from "../../lib/events";
import { markPushFailed, nodePushMessage, pushEvent } from "../../nodes/webhook";

/** Retry backoff in seconds: 5, 10, 20, 40, … capped at 5 minutes. */
export function pushBackoffSeconds(attempts: number): number {
  return Math.min(300, 5 * 2 ** Math.max(0, attempts - 1));
}

/**
 * `node-pushes` consumer: pushes each event to its node's webhook, retrying with backoff; after
 * the queue's max_retries the message goes to the dead-letter queue. `fetchImpl` is the boundary
 * tests replace (no test ever reaches the internet).
 */
export async function consumeNodePushes(batch: MessageBatch<unknown>, env: Env, fetchImpl: typeof fetch = fetch): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  for (const msg of batch.messages) {
    const parsed = nodePushMessage.safeParse(msg.body);
    if (!parsed.success) {
      console.error("node pushes: dropping a message that does not parse", msg.id);
      msg.ack();
      continue;
    }
    const result = await pushEvent(db, parsed.data, now, fetchImpl);
    if (typeof result === "object") {
      console.warn(`node pushes: event ${parsed.data.event_id} to ${parsed.data.node_id} failed (${result.retry}); retrying`);
      msg.retry({ delaySeconds: pushBackoffSeconds(msg.attempts) });
    } else {
      msg.ack();
    }
  }
}

/** Dead letters of `node-pushes`: recorded; the event itself stays pending for the node's heartbeats. */
export async function consumeNodePushDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  for (const msg of batch.messages) {
    const parsed = nodePushMessage.safeParse(msg.body);
    if (parsed.success) {
      await db.batch([
        markPushFailed(db, parsed.data.event_id),
        appendEvent(
          db,
          {
            type: "node.push_failed",
            subject: parsed.data.node_id,
            payload: { node_id: parsed.data.node_id, event_id: parsed.data.event_id, attempts: msg.attempts, still_pending: true },
            dedupeKey: `push_dlq:${msg.id}`,
          },
          now,
        ),
      ]);
    }
    msg.ack();
  }
}
