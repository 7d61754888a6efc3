import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { nodeEvents } from "../../../src/db/schema";
import { notifyNodesStatements, type InsertedNodeEvent } from "../../../src/nodes/events";
import { enqueuePushes, signPush, SIGNATURE_HEADER, TIMESTAMP_HEADER, type NodePushMessage } from "../../../src/nodes/webhook";
import { consumeNodePushDeadLetters, consumeNodePushes, pushBackoffSeconds } from "../../../src/workers/queues/node-pushes";
import { call } from "../../factories";
import { heartbeat, patchNode, registerNode } from "../../factories/nodes";

async function notify(nodeIds: string[], payload: Record<string, unknown>): Promise<InsertedNodeEvent[]> {
  const db = getDb(env.DB);
  const out: InsertedNodeEvent[] = [];
  for (const stmt of notifyNodesStatements(db, nodeIds, { type: "council_invite", payload }, new Date()))
    out.push(...((await stmt) as InsertedNodeEvent[]));
  return out;
}

async function hookedNode(name: string) {
  const node = await registerNode({ name, webhook_url: `https://${name}.node.invalid/hook` });
  expect(node.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
  await patchNode(node.node_id, { webhook_verified: true });
  return node;
}

function batchOf(messages: NodePushMessage[], attempts = 1) {
  return createMessageBatch(
    "crewplane-node-pushes",
    messages.map((body, i) => ({ id: `m-${body.event_id}-${i}-${attempts}`, timestamp: new Date(), attempts, body })),
  );
}

describe("webhook pushes of pending events", () => {
  it("marks events for push only for nodes with a verified webhook, and queues exactly those", async () => {
    const hooked = await hookedNode("verified");
    const unverified = await registerNode({ name: "unverified", webhook_url: "https://unverified.node.invalid/hook" });
    const plain = await registerNode({ name: "plain" });
    const inserted = await notify([hooked.node_id, unverified.node_id, plain.node_id], { n: 1 });
    expect(inserted.map((e) => [e.node_id, e.push_state]).sort()).toEqual(
      [
        [hooked.node_id, "pending"],
        [unverified.node_id, null],
        [plain.node_id, null],
      ].sort(),
    );
    const sent: unknown[] = [];
    await enqueuePushes(
      {
        NODE_PUSHES: {
          sendBatch: async (msgs: { body: unknown }[]) => void sent.push(...msgs.map((m) => m.body)),
        } as unknown as Queue<NodePushMessage>,
      },
      inserted,
    );
    expect(sent).toEqual([{ event_id: inserted.find((e) => e.node_id === hooked.node_id)!.id, node_id: hooked.node_id }]);
    // a queue that refuses loses nothing: the event is still pending for the heartbeat
    await enqueuePushes(
      { NODE_PUSHES: { sendBatch: async () => Promise.reject(new Error("queue down")) } as unknown as Queue<NodePushMessage> },
      inserted,
    );
    expect((await heartbeat(hooked)).pending_events.map((e) => e.payload)).toEqual([{ n: 1 }]);
  });

  it("signs a push with HMAC-SHA256 over timestamp and body; a 2xx takes the event off the pending list", async () => {
    const node = await hookedNode("signed");
    const [event] = await notify([node.node_id], { n: 2 });
    const seen: Request[] = [];
    const fetchOk = (async (url: string, init: RequestInit) => {
      seen.push(new Request(url, init));
      return new Response(null, { status: 204 });
    }) as unknown as typeof fetch;
    const batch = batchOf([{ event_id: event!.id, node_id: node.node_id }]);
    await consumeNodePushes(batch, env, fetchOk);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks).toHaveLength(1);
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.url).toBe("https://signed.node.invalid/hook");
    expect(req.redirect).toBe("manual");
    const body = await req.text();
    expect(JSON.parse(body)).toMatchObject({ id: String(event!.id), node_id: node.node_id, type: "council_invite", payload: { n: 2 } });
    const ts = req.headers.get(TIMESTAMP_HEADER)!;
    expect(req.headers.get(SIGNATURE_HEADER)).toBe(await signPush(node.webhook_secret!, ts, body));
    expect(req.headers.get(SIGNATURE_HEADER)).not.toBe(await signPush("0".repeat(64), ts, body));
    expect((await heartbeat(node)).pending_events).toEqual([]);
    const [row] = await getDb(env.DB).select().from(nodeEvents).where(eq(nodeEvents.id, event!.id));
    expect(row).toMatchObject({ pushState: "delivered", deliveredAt: expect.any(String) });
  });

  it("retries with backoff on an error status, a redirect or a network failure, and the event stays pending meanwhile", async () => {
    const node = await hookedNode("flaky");
    const [event] = await notify([node.node_id], { n: 3 });
    for (const answer of [
      () => new Response("no", { status: 500 }),
      () => new Response(null, { status: 302, headers: { location: "https://elsewhere.invalid" } }),
      () => Promise.reject(new TypeError("connection refused")),
    ]) {
      const batch = batchOf([{ event_id: event!.id, node_id: node.node_id }], 3);
      await consumeNodePushes(batch, env, (async () => answer()) as unknown as typeof fetch);
      const result = await getQueueResult(batch, createExecutionContext());
      expect(result.retryMessages).toHaveLength(1);
      expect(result.explicitAcks).toHaveLength(0);
    }
    expect(pushBackoffSeconds(1)).toBe(5);
    expect(pushBackoffSeconds(3)).toBe(20);
    expect(pushBackoffSeconds(20)).toBe(300);
    expect((await heartbeat(node)).pending_events.map((e) => e.payload)).toEqual([{ n: 3 }]);
  });

  it("records a push that gave up (dead letter) and keeps the event pending for heartbeats", async () => {
    const node = await hookedNode("dead");
    const [event] = await notify([node.node_id], { n: 4 });
    const dlq = createMessageBatch("crewplane-node-pushes-dlq", [
      { id: "dead-1", timestamp: new Date(), attempts: 6, body: { event_id: event!.id, node_id: node.node_id } },
    ]);
    await consumeNodePushDeadLetters(dlq, env);
    expect((await getQueueResult(dlq, createExecutionContext())).explicitAcks).toEqual(["dead-1"]);
    const [row] = await getDb(env.DB).select().from(nodeEvents).where(eq(nodeEvents.id, event!.id));
    expect(row).toMatchObject({ pushState: "failed", deliveredAt: null });
    expect((await heartbeat(node)).pending_events.map((e) => e.payload)).toEqual([{ n: 4 }]);
    const trail = await call(`/v1/events?type=node.push_failed&subject=${node.node_id}`);
    expect(trail.body.events[0].payload).toMatchObject({ event_id: event!.id, still_pending: true });
  });

  it("does not push an event the node already acknowledged by heartbeat", async () => {
    const node = await hookedNode("acked");
    const [event] = await notify([node.node_id], { n: 5 });
    await heartbeat(node, String(event!.id));
    let calls = 0;
    const batch = batchOf([{ event_id: event!.id, node_id: node.node_id }]);
    await consumeNodePushes(batch, env, (async () => {
      calls++;
      return new Response(null, { status: 200 });
    }) as unknown as typeof fetch);
    expect(calls).toBe(0);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks).toHaveLength(1);
  });
});
