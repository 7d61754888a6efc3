import * as z from "zod";
import type { Env } from "../env";
import { nodeIdSchema } from "../nodes/registry";
import { PRESENCE_SHARDS, presenceShard } from "../nodes/presence";

/** The NodePresence object's RPC inputs (parsed with zod inside the object) and its answers. */

const clockMs = z.number().int();

export const recordInput = z.object({
  nodeId: nodeIdSchema,
  /** The heartbeat's time (request clock). */
  atMs: clockMs,
  /** What D1's `last_heartbeat_at` held when the heartbeat read it (ms), null if never. */
  d1Ms: clockMs.nullable(),
});
export type RecordInput = z.input<typeof recordInput>;

/** Held heartbeats an isolate gathered for this shard over a short batch window (presence-store.ts). */
export const recordManyInput = z.object({ beats: z.array(recordInput).min(1).max(5_000) });
export type RecordManyInput = z.input<typeof recordManyInput>;

export const latestInput = z.object({ nodeIds: z.array(nodeIdSchema).max(1_000) });
export type LatestInput = z.input<typeof latestInput>;

export const flushInput = z.object({
  now: clockMs,
  /** Every held heartbeat, due or not (the hourly backstop and tests); else only those due within FLUSH_AHEAD_MS. */
  all: z.boolean().default(false),
});
export type FlushInput = z.input<typeof flushInput>;

export interface PresenceBeat {
  node_id: string;
  /** The node's latest heartbeat this shard has seen (ms). */
  beat_ms: number;
}

export interface FlushResult {
  /** Nodes whose held heartbeat went to D1. */
  flushed: number;
  /** Held heartbeats left (not yet due). */
  held: number;
}

/** The shard object of a node: `presence-<n>` of PRESENCE_SHARDS. */
export function getNodePresence(env: Pick<Env, "NODE_PRESENCE">, nodeId: string) {
  return getPresenceShard(env, presenceShard(nodeId));
}

/** One shard by number (flushing every shard, benchmarks). */
export function getPresenceShard(env: Pick<Env, "NODE_PRESENCE">, shard: number) {
  if (!Number.isInteger(shard) || shard < 0 || shard >= PRESENCE_SHARDS) throw new RangeError(`no presence shard ${shard}`);
  return env.NODE_PRESENCE.getByName(`presence-${shard}`);
}
