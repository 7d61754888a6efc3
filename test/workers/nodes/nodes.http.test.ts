import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { revokeCredential } from "../../../src/lib/credentials";
import { notifyNodesStatements } from "../../../src/nodes/events";
import { call } from "../../factories";
import { heartbeat, patchNode, registerNode } from "../../factories/nodes";

async function appendFor(nodeId: string, n: number, tag: string) {
  const db = getDb(env.DB);
  for (let i = 0; i < n; i++) {
    const [stmt] = notifyNodesStatements(db, [nodeId], { type: "test_event", payload: { tag, i } }, new Date());
    await stmt!;
  }
}

describe("node registration", () => {
  it("registers a node with a node_ + 16 hex id and a secret shown once, starting below every gate", async () => {
    const res = await call("/v1/nodes", { token: null, body: { name: "alpha", model_tier: 3 } });
    expect(res.status).toBe(201);
    expect(res.body.node_id).toMatch(/^node_[0-9a-f]{16}$/);
    expect(res.body.node_secret).toMatch(/^ncred_[0-9a-f]{16}\.[0-9a-f]{64}$/);
    expect(res.body.reputation).toBe(10);
    const view = await call(`/v1/nodes/${res.body.node_id}`, { token: null });
    expect(view.body).toMatchObject({
      node_id: res.body.node_id,
      name: "alpha",
      reputation: 10,
      model_tier: 3,
      last_heartbeat_at: null,
      council_member: false,
    });
    expect(JSON.stringify(view.body)).not.toContain(res.body.node_secret.split(".")[1]);
  });

  it("returns the same node, never a new identity, when called again with the node's own credentials", async () => {
    const node = await registerNode({ name: "again" });
    const again = await call("/v1/nodes", { token: node.token, body: { name: "again", model_tier: 3 } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ node_id: node.node_id, existing: true });
    expect(again.body.node_secret).toBeUndefined();
    // The secret's last hex digit changed (to 0, or to 1 when it already is 0: one run in 16 it was).
    const wrong = `${node.token.slice(0, -1)}${node.token.endsWith("0") ? "1" : "0"}`;
    const bad = await call("/v1/nodes", { token: wrong, body: { name: "again", model_tier: 3 } });
    expect(bad.status).toBe(401);
  });

  it("refuses invalid registrations with problem+json and writes nothing", async () => {
    for (const body of [
      { name: "x", model_tier: 6 },
      { name: "", model_tier: 3 },
      { name: "a\u202Eb", model_tier: 3 },
      { name: "w", model_tier: 3, webhook_url: "ftp://x" },
      { name: "e", model_tier: 3, extra: 1 },
    ]) {
      const res = await call("/v1/nodes", { token: null, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      expect(res.body.code).toBe("validation_failed");
    }
  });

  it("lets only an admin change reputation, tier and webhook verification, and records the change", async () => {
    const node = await registerNode({ name: "patched", webhook_url: "https://hooks.example/n" });
    const viewer = await call("/v1/admin/operators", { body: { name: "v", role: "manager" } });
    expect(
      (await call(`/v1/admin/nodes/${node.node_id}`, { method: "PATCH", token: viewer.body.token, body: { reputation: 90 } })).status,
    ).toBe(403);
    expect((await call(`/v1/admin/nodes/${node.node_id}`, { method: "PATCH", token: node.token, body: { reputation: 90 } })).status).toBe(
      403,
    );
    expect((await call(`/v1/admin/nodes/${node.node_id}`, { method: "PATCH", body: {} })).status).toBe(422);
    const patched = await patchNode(node.node_id, { reputation: 72.5, model_tier: 4, webhook_verified: true });
    expect(patched).toMatchObject({ reputation: 72.5, model_tier: 4, webhook_verified: true });
    const trail = await call(`/v1/events?type=node.updated&subject=${node.node_id}`);
    expect(trail.body.events[0].payload).toMatchObject({ changes: { reputation: 72.5 }, before: { reputation: 10 } });
    const noHook = await registerNode({ name: "nohook" });
    expect((await call(`/v1/admin/nodes/${noHook.node_id}`, { method: "PATCH", body: { webhook_verified: true } })).status).toBe(409);
  });
});

describe("heartbeats and pending events", () => {
  it("delivers pending events at least once until a later heartbeat acknowledges them", async () => {
    const node = await registerNode({ name: "beat" });
    await appendFor(node.node_id, 3, "a");
    const first = await heartbeat(node);
    expect(first.pending_events.map((e) => e.payload.i)).toEqual([0, 1, 2]);
    const again = await heartbeat(node);
    expect(again.pending_events.map((e) => e.id)).toEqual(first.pending_events.map((e) => e.id));
    const acked = await heartbeat(node, first.pending_events[1]!.id);
    expect(acked.pending_events.map((e) => e.payload.i)).toEqual([2]);
    expect((await call(`/v1/nodes/${node.node_id}`, { token: null })).body.last_heartbeat_at).not.toBeNull();
  });

  it("pages a backlog: the oldest 100 in id order with has_more, then what is past the acknowledgement", async () => {
    const node = await registerNode({ name: "backlog" });
    await appendFor(node.node_id, 102, "p");
    const first = await heartbeat(node);
    expect(first.pending_events.map((e) => e.payload.i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(first.has_more).toBe(true);
    const ids = first.pending_events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // The page answered with an acknowledgement starts past it, in the same request.
    const acked = await heartbeat(node, first.pending_events[49]!.id);
    expect(acked.pending_events.map((e) => e.payload.i)).toEqual(Array.from({ length: 52 }, (_, i) => 50 + i));
    expect(acked.has_more).toBe(false);
  });

  it("never lets an ack beyond the node's newest event swallow future events, and never moves the ack back", async () => {
    const node = await registerNode({ name: "overack" });
    await appendFor(node.node_id, 1, "b");
    const [e] = (await heartbeat(node)).pending_events;
    await heartbeat(node, "999999999");
    await appendFor(node.node_id, 1, "c");
    const next = await heartbeat(node, "1");
    expect(next.pending_events.map((p) => p.payload.tag)).toEqual(["c"]);
    expect(Number(next.pending_events[0]!.id)).toBeGreaterThan(Number(e!.id));
  });

  it("lets a node heartbeat only for itself", async () => {
    const a = await registerNode({ name: "a" });
    const b = await registerNode({ name: "b" });
    expect((await call(`/v1/nodes/${b.node_id}/heartbeat`, { token: a.token, body: {} })).status).toBe(403);
    expect((await call(`/v1/nodes/${b.node_id}/heartbeat`, { body: {} })).status).toBe(403);
    expect((await call(`/v1/nodes/${b.node_id}/heartbeat`, { token: null, body: {} })).status).toBe(401);
  });

  it("checks a node token inside the heartbeat's own write: a forged, revoked, foreign or runner token moves nothing", async () => {
    const node = await registerNode({ name: "guarded" });
    const other = await registerNode({ name: "other" });
    await appendFor(node.node_id, 2, "g");
    const first = await heartbeat(node);
    const seen = async () => {
      const row = await env.DB.prepare("SELECT last_heartbeat_at, acked_through FROM nodes WHERE id = ?").bind(node.node_id).first();
      return row as { last_heartbeat_at: string; acked_through: number };
    };
    const before = await seen();
    const ack = { ack_through: first.pending_events[1]!.id };
    const [id] = node.token.split(".");
    const runner = await call("/v1/admin/runners", { body: { name: "not-a-node" } });
    const refusals: Array<[string, number]> = [
      [`${id}.${"0".repeat(64)}`, 401], // the right id with a forged secret
      [other.token, 403], // a live node token of another node
      [runner.body.token, 403], // a live token of another kind
    ];
    for (const [token, status] of refusals) {
      const res = await call(`/v1/nodes/${node.node_id}/heartbeat`, { token, body: ack });
      expect([res.status, res.headers.get("content-type")], token.slice(0, 12)).toEqual([status, expect.stringContaining("problem+json")]);
    }
    // a bad token with a bad body: the token answers first
    expect(
      (await call(`/v1/nodes/${node.node_id}/heartbeat`, { token: `${id}.${"0".repeat(64)}`, body: { ack_through: "x" } })).status,
    ).toBe(401);
    expect(await seen()).toEqual(before);
    await revokeCredential(getDb(env.DB), "node", id!, "test", new Date());
    expect((await call(`/v1/nodes/${node.node_id}/heartbeat`, { token: node.token, body: ack })).status).toBe(401);
    expect(await seen()).toEqual(before);
    // the operator route still answers as before: an admin is not the node
    expect((await call(`/v1/nodes/${node.node_id}/heartbeat`, { body: ack })).status).toBe(403);
  });

  it("misses no event when a node heartbeats while events are being appended", async () => {
    const node = await registerNode({ name: "race" });
    const rounds = 30;
    const seen = new Set<string>();
    let ack: string | undefined;
    const take = (beat: Awaited<ReturnType<typeof heartbeat>>) => {
      for (const e of beat.pending_events) seen.add(`${e.payload.tag}:${e.payload.i}`);
      if (beat.pending_events.length > 0) ack = beat.pending_events[beat.pending_events.length - 1]!.id;
    };
    // Every heartbeat is in flight while four writers append; each acknowledges what the last one returned.
    for (let r = 0; r < rounds; r++) {
      const [beat] = await Promise.all([
        heartbeat(node, ack),
        ...Array.from({ length: 4 }, (_, w) => appendFor(node.node_id, 1, `r${r}w${w}`)),
      ]);
      take(beat);
    }
    for (let beat = await heartbeat(node, ack); beat.pending_events.length > 0; beat = await heartbeat(node, ack)) take(beat);
    expect(seen.size).toBe(rounds * 4);
  });
});
