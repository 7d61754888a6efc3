import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { nodePresence } from "../../../src/nodes/presence-store";
import { pollEvents } from "../../../src/a2a/nodes";
import { notifyNodesStatements } from "../../../src/nodes/events";
import { call } from "../../factories";
import { a2a, envelope, helloNode, senderId } from "../../factories/a2a";
import { patchNode } from "../../factories/nodes";

describe("POST /a2a/hello", () => {
  it("registers a new node under the id the client generated, with a secret shown once and the tier its model sets", async () => {
    const sender = senderId();
    const res = await a2a(
      "/hello",
      envelope("hello", sender, { model: "claude-sonnet-4", gene_count: 3, env_fingerprint: { platform: "linux" } }),
    );
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: "acknowledged",
      node_id: sender,
      your_node_id: sender,
      node_id_assigned_by_hub: false,
      node_secret: expect.stringMatching(/^[0-9a-f]{64}$/),
      model_tier: 3,
      model_tier_label: "advanced",
      reputation: 10,
    });
    expect(res.body.payload).toMatchObject({ status: "acknowledged", node_id: sender, node_secret: res.body.node_secret });
    // the same node on /v1
    const v1 = await call(`/v1/nodes/${sender}`, { token: null });
    expect(v1.body).toMatchObject({ node_id: sender, model_tier: 3, reputation: 10 });
    const registered = await call(`/v1/events?type=node.registered&subject=${sender}`);
    expect(registered.body.events[0].payload).toMatchObject({ via: "a2a", model: "claude-sonnet-4", model_tier: 3 });
    expect(JSON.stringify(registered.body)).not.toContain(res.body.node_secret);
  });

  it("refuses a sender_id that is not a node id instead of assigning one the client would ignore", async () => {
    const res = await a2a("/hello", envelope("hello", "my-agent-001", { model: "gpt-4o-mini" }));
    expect([res.status, res.body.code, res.body.errors[0].path]).toEqual([422, "validation_failed", "sender_id"]);
    expect((await call("/v1/events?type=node.registered")).body.events.some((e: any) => e.payload.sender_id === "my-agent-001")).toBe(
      false,
    );
    const unknown = await a2a("/hello", envelope("hello", senderId(), {}));
    expect(unknown.body).toMatchObject({ model_tier: 0, model_tier_label: "unclassified" });
  });

  it("returns the same node for a repeat hello with its id and secret, never a new identity", async () => {
    const node = await helloNode("gpt-5");
    await patchNode(node.node_id, { reputation: 42 });
    const again = await a2a("/hello", envelope("hello", node.node_id, { model: "gpt-5" }), node.token);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      node_id: node.node_id,
      node_id_assigned_by_hub: false,
      node_secret_status: "active",
      model_tier: 4,
      reputation: 42,
    });
    expect(again.body.node_secret).toBeUndefined();
    expect((await call(`/v1/events?type=node.registered&subject=${node.node_id}`)).body.events).toHaveLength(1);
  });

  it("refuses a hello for a registered id without its secret, with another node's secret, or with a bad one", async () => {
    const node = await helloNode();
    const other = await helloNode();
    const bare = await a2a("/hello", envelope("hello", node.node_id, { model: "gpt-5" }));
    expect([bare.status, bare.body.code, bare.body.reason]).toEqual([401, "unauthorized", "node_id_already_claimed"]);
    // a secret is looked up by the id the request names: another node's is simply not this node's
    const borrowed = await a2a("/hello", envelope("hello", node.node_id, {}), other.token);
    expect([borrowed.status, borrowed.body.reason]).toEqual([401, "node_secret_invalid"]);
    const forged = await a2a("/hello", envelope("hello", node.node_id, {}), "0".repeat(64));
    expect(forged.status).toBe(401);
    // the original node is unchanged
    expect((await call(`/v1/nodes/${node.node_id}`, { token: null })).body.model_tier).toBe(3);
  });

  it("answers envelope problems as documented, recording nothing", async () => {
    const sender = senderId();
    const { message_id: _m, timestamp: _t, ...missing } = envelope("hello", sender, {});
    const r1 = await a2a("/hello", missing);
    expect([r1.status, r1.body.code, r1.body.errors.map((e: any) => e.path).sort()]).toEqual([
      422,
      "validation_failed",
      ["message_id", "timestamp"],
    ]);
    const r2 = await a2a("/hello", { ...envelope("hello", sender, {}), protocol: "json-rpc" });
    expect([r2.status, r2.body.code, r2.headers.get("content-type")]).toEqual([400, "unsupported_protocol", "application/problem+json"]);
    const r3 = await a2a("/hello", { ...envelope("hello", sender, {}), protocol_version: "2.1.0" });
    expect([r3.status, r3.body.code]).toEqual([400, "unsupported_protocol"]);
    const r4 = await a2a("/hello", envelope("heartbeat", sender, {}));
    expect([r4.status, r4.body.errors[0].path]).toEqual([422, "message_type"]);
    const r5 = await a2a("/hello", envelope("hello", sender, { identity_doc: "x".repeat(70_000) }));
    expect([r5.status, r5.body.code, r5.body.limit_bytes]).toEqual([413, "payload_too_large", 65_536]);
    const r6 = await a2a("/hello", envelope("hello", sender, { identity_doc: "y".repeat(1_100_000) }));
    expect([r6.status, r6.body.code]).toEqual([413, "payload_too_large"]);
    const r7 = await call("/a2a/hello", { token: null, rawBody: "{not json" });
    expect([r7.status, r7.body.code]).toEqual([400, "malformed_request"]);
    const r8 = await a2a("/hello", envelope("hello", sender, { model: 42 }));
    expect([r8.status, r8.body.errors[0].path]).toEqual([422, "payload.model"]);
    const r9 = await a2a("/hello", { ...envelope("hello", sender, {}), payload: "hello" });
    expect(r9.status).toBe(422);
    expect((await call(`/v1/nodes/${sender}`, { token: null })).status).toBe(404);
  });
});

describe("POST /a2a/heartbeat and /a2a/events/poll", () => {
  it("beats with the node's secret, flat or enveloped, and tells an unknown node to say hello", async () => {
    const node = await helloNode();
    const beat = await a2a(
      "/heartbeat",
      { node_id: node.node_id, sender_id: node.node_id, gene_count: 2, env_fingerprint: { arch: "x64" } },
      node.token,
    );
    expect(beat.status).toBe(200);
    expect(beat.body).toMatchObject({ status: "ok", next_heartbeat_ms: 60_000, has_pending_events: false, pending_events: [] });
    expect((await call(`/v1/nodes/${node.node_id}`, { token: null })).body.last_heartbeat_at).toEqual(expect.any(String));
    const wrapped = await a2a("/heartbeat", envelope("heartbeat", node.node_id, { gene_count: 1 }), node.token);
    expect(wrapped.body.status).toBe("ok");

    const stranger = await a2a("/heartbeat", { sender_id: senderId() });
    expect([stranger.status, stranger.body.status]).toEqual([200, "unknown_node"]);
    expect((await a2a("/heartbeat", { sender_id: node.node_id })).status).toBe(401);
    const other = await helloNode();
    expect((await a2a("/heartbeat", { sender_id: node.node_id }, other.token)).status).toBe(401);
    expect((await a2a("/heartbeat", {}, node.token)).status).toBe(422);
  });

  it("delivers pending events until acknowledged, by heartbeat or by a poll that uses ack_through", async () => {
    const node = await helloNode();
    await patchNode(node.node_id, { reputation: 50 });
    // an event for the node: a council invitation is the usual one; any pending event will do here
    await getDb(env.DB).batch(
      notifyNodesStatements(
        getDb(env.DB),
        [node.node_id],
        { type: "council_invite", payload: { session_id: "delib_x" } },
        new Date(),
      ) as never,
    );

    const first = await a2a("/heartbeat", { sender_id: node.node_id }, node.token);
    expect(first.body).toMatchObject({ has_pending_events: true, pending_events: [expect.objectContaining({ type: "council_invite" })] });
    const id = first.body.pending_events[0].id;
    expect((await a2a("/heartbeat", { sender_id: node.node_id }, node.token)).body.pending_events.map((e: any) => e.id)).toEqual([id]);
    const poll = await a2a("/events/poll", { node_id: node.node_id, timeout_ms: 0, ack_through: "0" }, node.token);
    expect(poll.status).toBe(200);
    expect(poll.body).toMatchObject({ delivery: "ack_through", has_pending_events: true });
    expect(poll.body.events.map((e: any) => e.id)).toEqual([id]);
    const acked = await a2a("/events/poll", { node_id: node.node_id, timeout_ms: 200, ack_through: id }, node.token);
    expect(acked.body).toMatchObject({ events: [], has_pending_events: false });
    expect((await a2a("/heartbeat", { sender_id: node.node_id }, node.token)).body.pending_events).toEqual([]);
    expect((await a2a("/events/poll", { node_id: node.node_id, timeout_ms: 30_000 }, node.token)).status).toBe(422);
  });
});

describe("GET /a2a/policy", () => {
  it("publishes the gates, windows, limits and the model tier table", async () => {
    const res = await a2a("/policy");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      protocol: "gep-a2a",
      council: {
        propose: { min_reputation: 30, min_model_tier: 3 },
        deliberate: { min_reputation: 40, min_model_tier: 3 },
        vote: { min_reputation: 20, min_model_tier: 1 },
      },
      projects: { decomposition: { min_tasks: 2, max_tasks: 10, max_weight_sum: 0.85 }, task_expiry_days: 90 },
    });
    expect(res.body.model_tiers).toHaveLength(6);
    expect((await a2a("/policy/model-tiers?model=gemini-2.5-pro")).body).toMatchObject({
      model: "gemini-2.5-pro",
      tier: 3,
      label: "advanced",
    });
  });
});

describe("a long-poll on /a2a/events/poll", () => {
  it("heartbeats once when it starts and only reads while it waits, then answers with what arrived", async () => {
    const node = await helloNode();
    const db = getDb(env.DB);
    const sentinel = "2000-01-01T00:00:00.000Z";
    let waits = 0;
    const sleep = async () => {
      waits++;
      // While the poll waits, mark the row: a heartbeat during the wait would overwrite the mark.
      await env.DB.prepare("UPDATE nodes SET last_heartbeat_at = ? WHERE id = ?").bind(sentinel, node.node_id).run();
      if (waits === 3)
        await db.batch(notifyNodesStatements(db, [node.node_id], { type: "council_invite", payload: { n: 1 } }, new Date()) as [any]);
    };
    const answer = await pollEvents(db, nodePresence(env), node.node_id, { timeout_ms: 10_000 }, new Date(), { sleep, nowMs: () => Date.now() });
    expect(waits).toBe(3);
    expect(answer).toMatchObject({
      node_id: node.node_id,
      delivery: "delivered",
      events: [expect.objectContaining({ type: "council_invite" })],
    });
    const row = await env.DB.prepare("SELECT last_heartbeat_at FROM nodes WHERE id = ?")
      .bind(node.node_id)
      .first<{ last_heartbeat_at: string }>();
    expect(row!.last_heartbeat_at).toBe(sentinel);
  });
});
