import { getNodePresence, getPresenceShard, type FlushResult } from "../durable-objects/node-presence-rpc";
import type { Env } from "../env";
import { PRESENCE_SHARDS, presenceShard } from "./presence";

/**
 * What a heartbeat needs of presence (src/nodes/presence.ts): hold a beat D1 did not take. An
 * interface so the heartbeat's SQL stays testable without the objects.
 */
export interface PresenceRecorder {
  /**
   * Holds a beat. It may return before the shard has it (`nodePresence` with `defer`): safe because a
   * heartbeat presence holds is one D1 did not need, D1's value being inside its window, so every
   * window query answers "recent" until that window ends, minutes after the beat lands.
   */
  record(nodeId: string, atMs: number, d1Ms: number | null): Promise<void>;
}

export interface PresenceReader {
  /** The latest heartbeat presence holds per node (ms); nodes it never saw are absent. */
  latest(nodeIds: readonly string[]): Promise<Map<string, number>>;
}

/**
 * How long an isolate gathers held heartbeats for one shard before one `recordMany` call takes them
 * all: with many heartbeats a second a shard gets about one call a second per isolate instead of one
 * per heartbeat (a Durable Object call costs more than the read batch the heartbeat itself pays).
 * Far inside the minutes of slack a held beat has (src/nodes/presence.ts), and far inside the 30 s a
 * request's `waitUntil` may run after its answer.
 */
export const PRESENCE_BATCH_MS = 1_000;

/** A batch this full goes out with its timer and the next beat starts a new one (recordMany takes up to 5,000). */
const PRESENCE_BATCH_MAX = 2_000;

/** A shard's gathering batch: the latest beat per node, and the oldest D1 value any of them read. */
type Beats = Map<string, { atMs: number; d1Ms: number | null }>;
// Per isolate and shard: the batch still gathering beats. The request that starts it keeps it alive
// through its waitUntil(sent) (a request's waitUntil may run 30 s past its answer; the batch goes in
// 1 s); the others only add their beat. A waitUntil per heartbeat on the one shared promise kept
// every request of that second alive on another request's timer (issue 26 item 5).
const batches = new Map<number, Beats>();

/** Adds a beat to its shard's batch; returns the batch's send when this beat started the batch. */
function enqueue(env: Pick<Env, "NODE_PRESENCE" | "DB">, nodeId: string, atMs: number, d1Ms: number | null): Promise<void> | null {
  const shard = presenceShard(nodeId);
  let beats = batches.get(shard);
  let started: Promise<void> | null = null;
  if (!beats) {
    const batch: Beats = new Map();
    beats = batch;
    const sent = new Promise<void>((resolve) => setTimeout(resolve, PRESENCE_BATCH_MS)).then(async () => {
      if (batches.get(shard) === batch) batches.delete(shard); // beats from now on start the next batch
      const list = [...batch].map(([id, b]) => ({ nodeId: id, atMs: b.atMs, d1Ms: b.d1Ms }));
      try {
        await getPresenceShard(env, shard).recordMany({ beats: list });
      } catch (err) {
        // The shard is unreachable: D1 takes the beats as it did before presence (never backwards).
        console.error("node presence: batch record failed, heartbeats written to D1", err);
        await env.DB.prepare(
          `UPDATE nodes SET last_heartbeat_at = v.at
           FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS at FROM json_each(?1)) AS v
           WHERE nodes.id = v.id AND (nodes.last_heartbeat_at IS NULL OR nodes.last_heartbeat_at < v.at)`,
        )
          .bind(JSON.stringify(list.map((b) => [b.nodeId, new Date(b.atMs).toISOString()])))
          .run();
      }
    });
    batches.set(shard, batch);
    started = sent;
  }
  const prev = beats.get(nodeId);
  // The latest beat, and the oldest D1 value any of them read (its deadline is the earliest).
  const d1 = prev === undefined ? d1Ms : prev.d1Ms === null || d1Ms === null ? null : Math.min(prev.d1Ms, d1Ms);
  beats.set(nodeId, { atMs: Math.max(prev?.atMs ?? atMs, atMs), d1Ms: d1 });
  if (beats.size >= PRESENCE_BATCH_MAX && batches.get(shard) === beats) batches.delete(shard);
  return started;
}

/**
 * Presence in the NodePresence objects, one shard per node id hash. With `defer` (a request's
 * `waitUntil`), `record` returns at once and the beat joins the isolate's batch for its shard.
 */
export function nodePresence(
  env: Pick<Env, "NODE_PRESENCE" | "DB">,
  options: { defer?: (work: Promise<unknown>) => void } = {},
): PresenceRecorder & PresenceReader {
  const defer = options.defer;
  return {
    async record(nodeId, atMs, d1Ms) {
      if (defer) {
        const started = enqueue(env, nodeId, atMs, d1Ms);
        if (started) defer(started);
        return;
      }
      await getNodePresence(env, nodeId).record({ nodeId, atMs, d1Ms });
    },
    async latest(nodeIds) {
      const byShard = new Map<number, string[]>();
      for (const id of new Set(nodeIds)) {
        const shard = presenceShard(id);
        byShard.set(shard, [...(byShard.get(shard) ?? []), id]);
      }
      const answers = await Promise.all([...byShard].map(([shard, ids]) => getPresenceShard(env, shard).latest({ nodeIds: ids })));
      return new Map(answers.flat().map((b) => [b.node_id, b.beat_ms]));
    },
  };
}

/**
 * Every shard writes every heartbeat it holds to D1 (the hourly council tick, before the term check
 * and decay: a backstop for the objects' own alarms). A shard that fails is reported, not thrown:
 * its alarm retries, and the others' flushes stand.
 */
export async function flushPresence(env: Pick<Env, "NODE_PRESENCE">, now: Date): Promise<{ flushed: number; failed: number }> {
  const results = await Promise.allSettled(
    Array.from({ length: PRESENCE_SHARDS }, (_, shard) => getPresenceShard(env, shard).flush({ now: now.getTime(), all: true })),
  );
  let flushed = 0;
  let failed = 0;
  for (const r of results) {
    if (r.status === "fulfilled") flushed += (r.value as FlushResult).flushed;
    else {
      failed++;
      console.error("node presence: a shard flush failed", r.reason);
    }
  }
  return { flushed, failed };
}

/** A node's latest heartbeat (ISO): the later of D1's and presence's. For the node views. */
export async function latestBeatOf(env: Pick<Env, "NODE_PRESENCE" | "DB">, nodeId: string, d1: string | null): Promise<string | null> {
  const held = (await nodePresence(env).latest([nodeId])).get(nodeId);
  if (held === undefined) return d1;
  const iso = new Date(held).toISOString();
  return d1 === null || iso > d1 ? iso : d1;
}
