import { and, eq, isNull, sql } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { nodeEvents, nodes } from "../db/schema";
import type { Env } from "../env";
import type { InsertedNodeEvent } from "./events";
import { nodeIdSchema } from "./registry";

/** A message on the `node-pushes` queue: push one pending event to its node's webhook. */
export const nodePushMessage = z.object({ event_id: z.number().int().positive(), node_id: nodeIdSchema });
export type NodePushMessage = z.infer<typeof nodePushMessage>;

export const SIGNATURE_HEADER = "x-crewplane-signature";
export const TIMESTAMP_HEADER = "x-crewplane-timestamp";
const EVENT_ID_HEADER = "x-crewplane-event-id";

const encoder = new TextEncoder();

/**
 * The push signature: `sha256=` + hex HMAC-SHA256 over `<timestamp>.<body>` with the node's
 * webhook secret. The timestamp is signed so a receiver can refuse replays of old pushes.
 */
export async function signPush(secret: string, timestamp: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestamp}.${body}`));
  return `sha256=${Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Queues pushes for events just inserted for nodes with a verified webhook. A queue that refuses
 * loses nothing: the events stay pending and the next heartbeat returns them.
 */
export async function enqueuePushes(env: Pick<Env, "NODE_PUSHES">, inserted: readonly InsertedNodeEvent[]): Promise<void> {
  const messages = inserted
    .filter((e) => e.push_state === "pending")
    .map((e) => ({ body: { event_id: e.id, node_id: e.node_id } satisfies NodePushMessage }));
  for (let i = 0; i < messages.length; i += 100) {
    try {
      await env.NODE_PUSHES.sendBatch(messages.slice(i, i + 100), {});
    } catch (err) {
      console.error("node pushes: queue refused a batch; those events stay pending for heartbeats", err);
    }
  }
}

export type PushResult = "delivered" | "skipped" | { retry: string };

/**
 * Pushes one event. A 2xx answer takes the event off the node's pending list; anything else (an
 * error, a redirect, a timeout) asks the queue to retry. Redirects are not followed, so a webhook
 * cannot bounce a signed push to another host.
 */
export async function pushEvent(db: Db, message: NodePushMessage, now: Date, fetchImpl: typeof fetch): Promise<PushResult> {
  const row = await db
    .select({
      event: nodeEvents,
      url: nodes.webhookUrl,
      secret: nodes.webhookSecret,
      verified: nodes.webhookVerified,
      acked: nodes.ackedThrough,
    })
    .from(nodeEvents)
    .innerJoin(nodes, eq(nodes.id, nodeEvents.nodeId))
    .where(and(eq(nodeEvents.id, message.event_id), eq(nodeEvents.nodeId, message.node_id)))
    .get();
  if (!row || row.event.deliveredAt || row.event.id <= row.acked) return "skipped";
  if (!row.verified || !row.url || !row.secret) return "skipped";
  const body = JSON.stringify({
    id: String(row.event.id),
    node_id: message.node_id,
    type: row.event.type,
    payload: row.event.payload,
    created_at: row.event.createdAt,
  });
  const timestamp = String(Math.floor(now.getTime() / 1000));
  let res: Response;
  try {
    res = await fetchImpl(row.url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(10_000),
      headers: {
        "content-type": "application/json",
        [EVENT_ID_HEADER]: String(row.event.id),
        [TIMESTAMP_HEADER]: timestamp,
        [SIGNATURE_HEADER]: await signPush(row.secret, timestamp, body),
      },
      body,
    });
  } catch (err) {
    return { retry: `fetch_failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300) };
  }
  if (res.status < 200 || res.status >= 300) return { retry: `status_${res.status}` };
  await db
    .update(nodeEvents)
    .set({ pushState: "delivered", deliveredAt: now.toISOString() })
    .where(and(eq(nodeEvents.id, row.event.id), isNull(nodeEvents.deliveredAt)));
  return "delivered";
}

/** The push gave up (dead letter): the event stays pending for heartbeats; the trail says so. */
export function markPushFailed(db: Db, eventId: number) {
  return db
    .update(nodeEvents)
    .set({ pushState: "failed" })
    .where(and(eq(nodeEvents.id, eventId), isNull(nodeEvents.deliveredAt), sql`${nodeEvents.pushState} IS NOT 'delivered'`));
}
