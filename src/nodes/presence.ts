/**
 * Node presence (issue 26 item 2): the rules that let a heartbeat skip its D1 write and still keep
 * every query on `nodes.last_heartbeat_at` exact. Pure: times in, decisions out; the I/O lives in
 * presence-store.ts and the NodePresence Durable Object.
 *
 * The invariant, for every instant T (L = what D1 holds, P = the node's true latest heartbeat):
 *
 *     L = P,  or  P > L and T < L + PRESENCE_WINDOW_MS.
 *
 * A query asks "a heartbeat within X of T" (council: 48 h and 72 h, term unreachability 48 h, offers
 * `offer_heartbeat_hours` ≥ 1 h, decay ≥ 1 day). D1 and the truth can only disagree when the window's
 * edge T − X falls in (L, P], i.e. when T − L > X. Under the invariant that needs T − L ≥ W with
 * L < P, which it forbids, for every X ≥ W. So every window of at least `PRESENCE_WINDOW_MS` is
 * answered from D1 exactly as if each heartbeat had been written.
 *
 * It is kept in two places:
 * - the heartbeat writes D1 itself when D1's value is `PRESENCE_WINDOW_MS` old or more (the first
 *   heartbeat of a window; also a node's first heartbeat ever, and one after the clock went back);
 * - otherwise the heartbeat is held in presence, which flushes it to D1 before `L + W` (the object's
 *   alarm, coalescing a shard's due nodes into one statement; the hourly council tick flushes every
 *   shard again as a backstop).
 */

/**
 * The window. The shortest query window is 1 h (`offer_heartbeat_hours` minimum), so a flush has at
 * least 50 minutes of slack past its deadline before any answer could differ; the council's 48 h
 * windows have 47 h 50 min. D1 then takes one `last_heartbeat_at` write per node per window instead
 * of one per heartbeat (a minute apart).
 */
export const PRESENCE_WINDOW_MS = 10 * 60_000;

/**
 * A flush takes every dirty node due within this much of now, so a shard's nodes (whose windows are
 * spread over the whole window) are written in a few statements per window, not one per node.
 */
export const FLUSH_AHEAD_MS = PRESENCE_WINDOW_MS / 2;

/**
 * Shards of the presence objects; a node's shard is a hash of its id (see presenceShard). Few: each
 * isolate makes one call per shard per batch window (presence-store.ts), so the shard count bounds
 * the Durable Object calls heartbeats cost (32 shards cost a heartbeat about a fifth of its CPU in
 * the council benchmark, 8 next to nothing). 100k nodes beating every minute are 208 held beats a
 * second per shard, in about one call a second per isolate: far below an object's ~1,000 requests
 * a second. Changing the count moves nodes to other shards: a beat an old shard still holds reaches
 * D1 by that shard's own alarm (only forward), so D1's windows stay exact; until then the node view
 * may show D1's older time.
 */
export const PRESENCE_SHARDS = 8;

/** What the heartbeat read from D1 about its node. */
export interface BeatFacts {
  /** `nodes.last_heartbeat_at` (ms), null if never. */
  d1LastBeatMs: number | null;
  ackedThrough: number;
  /** The node's newest pending event id (0 when none). */
  newestEventId: number;
}

export interface BeatPlan {
  /** D1's `last_heartbeat_at` must take this heartbeat now (first of a window). */
  writeBeat: boolean;
  /** The acknowledgement watermark moves (pending events acknowledged): a D1 write either way. */
  moveAck: boolean;
}

/** Whether D1's value leaves the window: never set, `W` old or more, or in the future (the test clock went back). */
export function windowLapsed(d1LastBeatMs: number | null, nowMs: number, windowMs = PRESENCE_WINDOW_MS): boolean {
  return d1LastBeatMs === null || nowMs - d1LastBeatMs >= windowMs || d1LastBeatMs > nowMs;
}

/**
 * What one heartbeat writes to D1. Nothing when D1's time is still inside the window and no pending
 * event is acknowledged: presence then holds the heartbeat.
 */
export function planBeat(facts: BeatFacts, ackThrough: number | undefined, nowMs: number, windowMs = PRESENCE_WINDOW_MS): BeatPlan {
  const ackTo = ackThrough === undefined ? 0 : Math.min(ackThrough, facts.newestEventId);
  return { writeBeat: windowLapsed(facts.d1LastBeatMs, nowMs, windowMs), moveAck: ackTo > facts.ackedThrough };
}

/** When presence must have written a held heartbeat to D1: the end of D1's window. */
export function flushDeadline(d1LastBeatMs: number | null, nowMs: number, windowMs = PRESENCE_WINDOW_MS): number {
  // Unknown D1 time (never written): write at once; a held beat then never outlives its window.
  return d1LastBeatMs === null ? nowMs : d1LastBeatMs + windowMs;
}

/** A node's shard: FNV-1a of its id, so every Worker isolate agrees without a lookup. */
export function presenceShard(nodeId: string, shards = PRESENCE_SHARDS): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < nodeId.length; i++) {
    h ^= nodeId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shards;
}
