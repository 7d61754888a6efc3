import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import * as z from "zod";
import { getDb } from "../../db/client";
import { pendingEvents, takePendingEvents } from "../../nodes/events";
import type { AppEnv } from "../app-env";

/** How often a node's stream looks for events, and how often an idle one says it is alive. */
const STREAM_POLL_MS = 1_000;
const KEEPALIVE_MS = 15_000;
/** A stream ends after `duration_ms` (EvoMap's client asks for 5 min), at most 10 min; the client reconnects. */
const DEFAULT_STREAM_MS = 5 * 60_000;
const MAX_STREAM_MS = 10 * 60_000;
const RETRY_MS = 5_000;

export const streamQuery = z.object({
  node_id: z.string().max(128),
  duration_ms: z.coerce.number().int().min(1_000).max(86_400_000).optional(),
});

/**
 * `GET /a2a/events/stream?node_id=`: the node's pending events as Server-Sent Events, one `event:` per
 * event (its type), `id:` its id, `data:` the event as the poll shows it. Delivery is the poll's without
 * `ack_through`: an event written to the stream counts as delivered (taken in one batch, so a stream and
 * a poll racing never both hand out the same event).
 */
export function a2aEventStream(c: Context<AppEnv>, nodeId: string, durationMs: number | undefined): Response {
  const db = getDb(c.env.DB);
  return streamSSE(c, async (stream) => {
    const endAt = Date.now() + Math.min(durationMs ?? DEFAULT_STREAM_MS, MAX_STREAM_MS);
    // No data: EventSource takes the reconnection delay and dispatches nothing.
    await stream.write(`retry: ${RETRY_MS}\n\n`);
    let quietSince = Date.now();
    while (!stream.aborted && Date.now() < endAt) {
      const pending = await pendingEvents(db, nodeId);
      if (pending.pending_events.length > 0) {
        const taken = await takePendingEvents(db, nodeId);
        for (const e of taken.pending_events) await stream.writeSSE({ id: e.id, event: e.type, data: JSON.stringify(e) });
        if (taken.has_more) continue;
        quietSince = Date.now();
      } else if (Date.now() - quietSince >= KEEPALIVE_MS) {
        await stream.write(": keepalive\n\n");
        quietSince = Date.now();
      }
      await stream.sleep(STREAM_POLL_MS);
    }
  });
}
