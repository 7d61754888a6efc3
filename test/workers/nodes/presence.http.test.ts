import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadMemberPool } from "../../../src/council/session-store";
import { getDb } from "../../../src/db/client";
import { getNodePresence } from "../../../src/durable-objects/node-presence-rpc";
import { heartbeat, notifyNodesStatements } from "../../../src/nodes/events";
import { PRESENCE_WINDOW_MS, presenceShard } from "../../../src/nodes/presence";
import { nodePresence, type PresenceRecorder } from "../../../src/nodes/presence-store";
import { call } from "../../factories";
import { eligibleNode, heartbeat as httpHeartbeat, patchNode, registerNode } from "../../factories/nodes";

const MIN = 60_000;
const HOUR = 60 * MIN;
const db = () => getDb(env.DB);
const presence = () => nodePresence(env);

async function d1Beat(nodeId: string): Promise<string | null> {
  const row = await env.DB.prepare(`SELECT last_heartbeat_at FROM nodes WHERE id = ?`)
    .bind(nodeId)
    .first<{ last_heartbeat_at: string | null }>();
  return row!.last_heartbeat_at;
}

async function heldBeat(nodeId: string): Promise<number | undefined> {
  return (await presence().latest([nodeId])).get(nodeId);
}

describe("heartbeats held in presence", () => {
  it("writes D1 on the first heartbeat of a window only, and the node's view shows the later one presence holds", async () => {
    const node = await registerNode({ name: "quiet" });
    const first = await httpHeartbeat(node);
    expect(await d1Beat(node.node_id)).toBe(first.server_time);
    const later = new Date(Date.parse(first.server_time) + 3 * MIN);
    const beat = await heartbeat(db(), node.node_id, undefined, later, presence());
    expect(beat.recorded).toBe("presence");
    expect(await d1Beat(node.node_id)).toBe(first.server_time);
    const view = await call(`/v1/nodes/${node.node_id}`, { token: null });
    expect(view.body.last_heartbeat_at).toBe(later.toISOString());
    // The next window's first heartbeat goes to D1 again.
    const next = new Date(Date.parse(first.server_time) + PRESENCE_WINDOW_MS);
    expect((await heartbeat(db(), node.node_id, undefined, next, presence())).recorded).toBe("d1");
    expect(await d1Beat(node.node_id)).toBe(next.toISOString());
  });

  it("answers a heartbeat over HTTP before its shard records it, and the shard then holds it", async () => {
    const node = await registerNode({ name: "deferred" });
    const first = await httpHeartbeat(node);
    await new Promise((r) => setTimeout(r, 5)); // two distinct instants
    const second = await httpHeartbeat(node);
    expect(second.server_time > first.server_time).toBe(true);
    let held: number | undefined;
    for (let i = 0; i < 50 && held !== Date.parse(second.server_time); i++) {
      await new Promise((r) => setTimeout(r, 20));
      held = await heldBeat(node.node_id);
    }
    expect(held).toBe(Date.parse(second.server_time));
    expect(await d1Beat(node.node_id)).toBe(first.server_time);
  });

  it("lets exactly one of racing first heartbeats write D1, holds the others, and keeps the latest whatever the order", async () => {
    const node = await registerNode({ name: "racer" });
    const t = new Date(Date.now() + HOUR);
    const same = await Promise.all(Array.from({ length: 10 }, () => heartbeat(db(), node.node_id, undefined, t, presence())));
    expect(same.filter((b) => b.recorded === "d1")).toHaveLength(1);
    expect(await d1Beat(node.node_id)).toBe(t.toISOString());
    // Later beats of the same window, arriving out of order and at once.
    const offsets = [5, 2, 8, 1, 7, 3, 6, 4];
    const racing = await Promise.all(
      offsets.map((m) => heartbeat(db(), node.node_id, undefined, new Date(t.getTime() + m * MIN), presence())),
    );
    expect(racing.every((b) => b.recorded === "presence")).toBe(true);
    expect(await d1Beat(node.node_id)).toBe(t.toISOString());
    expect(await heldBeat(node.node_id)).toBe(t.getTime() + 8 * MIN);
    const flushed = await getNodePresence(env, node.node_id).flush({ now: t.getTime() + 8 * MIN, all: true });
    expect(flushed.flushed).toBeGreaterThanOrEqual(1);
    expect(await d1Beat(node.node_id)).toBe(new Date(t.getTime() + 8 * MIN).toISOString());
  });

  it("holds a batch of beats as one beat at a time would: latest beat, D1 only forward, earliest deadline, none when D1 is newer", async () => {
    // Three node ids of one shard (the shard does not need them registered).
    const ids = Array.from({ length: 64 }, (_, i) => `node_${(0xba7c0000 + i).toString(16).padStart(16, "0")}`);
    const [x, y, z] = ids.filter((id) => presenceShard(id) === presenceShard(ids[0]!)) as [string, string, string];
    const shard = getNodePresence(env, x);
    const t = Date.now() + 3 * HOUR;
    // x: two beats (out of order) against one D1 value; y: D1 newer than the beat (not held); z: D1 never saw it.
    const first = await shard.recordMany({
      beats: [
        { nodeId: x, atMs: t + 5 * MIN, d1Ms: t },
        { nodeId: y, atMs: t + MIN, d1Ms: t + 2 * MIN },
        { nodeId: z, atMs: t + MIN, d1Ms: null },
      ],
    });
    expect(first.held).toBe(2);
    const second = await shard.record({ nodeId: x, atMs: t + 3 * MIN, d1Ms: t - MIN });
    // The latest beat stays; the deadline is the earlier D1 value's window end.
    expect(second).toEqual({ beat_ms: t + 5 * MIN, due_ms: t - MIN + PRESENCE_WINDOW_MS });
    // y's beat is older than what D1 holds: nothing due; a later beat past D1 is held from D1's window.
    expect(await shard.record({ nodeId: y, atMs: t + MIN, d1Ms: null })).toEqual({ beat_ms: t + MIN, due_ms: null });
    expect(await shard.record({ nodeId: y, atMs: t + 4 * MIN, d1Ms: t + 2 * MIN })).toEqual({
      beat_ms: t + 4 * MIN,
      due_ms: t + 2 * MIN + PRESENCE_WINDOW_MS,
    });
    // z: D1 never saw it, so it is due at once.
    expect((await shard.record({ nodeId: z, atMs: t + MIN, d1Ms: null })).due_ms).toBe(t + MIN);
    const latest = await shard.latest({ nodeIds: [x, y, z] });
    expect(new Map(latest.map((r) => [r.node_id, r.beat_ms]))).toEqual(
      new Map([
        [x, t + 5 * MIN],
        [y, t + 4 * MIN],
        [z, t + MIN],
      ]),
    );
    // After a flush D1 holds them; a beat not newer than that is no longer held.
    await shard.flush({ now: t + 5 * MIN, all: true });
    expect(await shard.record({ nodeId: x, atMs: t + 5 * MIN, d1Ms: null })).toEqual({ beat_ms: t + 5 * MIN, due_ms: null });
  });

  it("never moves D1's heartbeat backwards when a flush and a newer window's write cross", async () => {
    const node = await registerNode({ name: "crossing" });
    const t = Date.now() + 2 * HOUR;
    await heartbeat(db(), node.node_id, undefined, new Date(t), presence());
    await heartbeat(db(), node.node_id, undefined, new Date(t + 4 * MIN), presence());
    // A new window's heartbeat reaches D1 before the shard flushes its older held beat.
    await heartbeat(db(), node.node_id, undefined, new Date(t + PRESENCE_WINDOW_MS + MIN), presence());
    await getNodePresence(env, node.node_id).flush({ now: t + PRESENCE_WINDOW_MS + MIN, all: true });
    expect(await d1Beat(node.node_id)).toBe(new Date(t + PRESENCE_WINDOW_MS + MIN).toISOString());
  });

  it("applies an acknowledgement on a held heartbeat: the watermark moves, the heartbeat time stays in presence", async () => {
    const node = await registerNode({ name: "acker" });
    for (let i = 0; i < 3; i++) {
      const [stmt] = notifyNodesStatements(db(), [node.node_id], { type: "test_event", payload: { i } }, new Date());
      await stmt!;
    }
    const first = await httpHeartbeat(node);
    expect(first.pending_events).toHaveLength(3);
    const later = new Date(Date.parse(first.server_time) + MIN);
    const beat = await heartbeat(db(), node.node_id, Number(first.pending_events[1]!.id), later, presence());
    expect(beat.pending_events.map((e) => e.payload.i)).toEqual([2]);
    expect(beat.recorded).toBe("presence");
    expect(await d1Beat(node.node_id)).toBe(first.server_time);
    // Acknowledged for good: the next heartbeat (over HTTP) still shows only the third.
    expect((await httpHeartbeat(node)).pending_events.map((e) => e.payload.i)).toEqual([2]);
  });

  it("holds nothing for a suspended node's heartbeat", async () => {
    const node = await registerNode({ name: "suspended" });
    await httpHeartbeat(node);
    await patchNode(node.node_id, { suspended: true });
    const before = await d1Beat(node.node_id);
    await expect(heartbeat(db(), node.node_id, undefined, new Date(Date.now() + MIN), presence())).rejects.toMatchObject({
      code: "forbidden",
    });
    expect(await heldBeat(node.node_id)).toBeUndefined();
    expect(await d1Beat(node.node_id)).toBe(before);
  });

  it("writes the heartbeat to D1 when its presence shard cannot be reached", async () => {
    const node = await registerNode({ name: "fallback" });
    const first = await httpHeartbeat(node);
    const down: PresenceRecorder = { record: () => Promise.reject(new Error("overloaded")) };
    const later = new Date(Date.parse(first.server_time) + 2 * MIN);
    expect((await heartbeat(db(), node.node_id, undefined, later, down)).recorded).toBe("d1");
    expect(await d1Beat(node.node_id)).toBe(later.toISOString());
  });

  it("has the hourly council tick write every held heartbeat to D1 first", async () => {
    const node = await registerNode({ name: "ticked" });
    const first = await httpHeartbeat(node);
    const later = new Date(Date.parse(first.server_time) + 2 * MIN);
    await heartbeat(db(), node.node_id, undefined, later, presence());
    expect(await d1Beat(node.node_id)).toBe(first.server_time);
    const tick = await call("/v1/admin/ticks/council", { method: "POST" });
    expect(tick.status).toBe(200);
    expect(await d1Beat(node.node_id)).toBe(later.toISOString());
  });

  // Last in the file: it moves the test clock.
  it("seats a node to the exact end of its 48 h window when its last heartbeat was only held, through the shard's alarm", async () => {
    const node = await eligibleNode("edge", 55, 3);
    const d1 = await d1Beat(node.node_id);
    const held = new Date(Date.parse(d1!) + 6 * MIN);
    expect((await heartbeat(db(), node.node_id, undefined, held, presence())).recorded).toBe("presence");
    // The shard's alarm is set before the deadline (the end of D1's window), mapped to real time.
    const stub = getNodePresence(env, node.node_id);
    const alarm = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
    const deadlineReal = Date.parse(d1!) + PRESENCE_WINDOW_MS - (held.getTime() - Date.now());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(deadlineReal);
    // The alarm runs at its time (the test clock stands 9 minutes on) and writes the held beat.
    await call("/v1/admin/clock", { body: { advance_ms: 9 * MIN } });
    await runDurableObjectAlarm(stub);
    expect(await d1Beat(node.node_id)).toBe(held.toISOString());
    const edge = held.getTime() + 48 * HOUR;
    const seated = async (at: number) => (await loadMemberPool(db(), new Date(at))).some((c) => c.node_id === node.node_id);
    expect(await seated(edge)).toBe(true);
    expect(await seated(edge + 1)).toBe(false);
  });
});
