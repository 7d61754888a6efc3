import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { FLUSH_AHEAD_MS, flushDeadline, PRESENCE_WINDOW_MS } from "../nodes/presence";
import {
  flushInput,
  latestInput,
  recordInput,
  recordManyInput,
  type FlushInput,
  type FlushResult,
  type LatestInput,
  type PresenceBeat,
  type RecordInput,
  type RecordManyInput,
} from "./node-presence-rpc";

/** Nodes per flush statement: one JSON parameter each, far below D1's 100 KB statement and 2 MB value limits. */
const FLUSH_CHUNK = 500;
/** A flush that failed (D1 unavailable) is tried again this soon, well inside the 50 minutes of slack. */
const RETRY_MS = 30_000;

/**
 * Heartbeat presence for one shard of the swarm (issue 26; the rules are in src/nodes/presence.ts):
 * each node's latest heartbeat, what D1 holds for it, and when a held heartbeat must reach D1. A
 * heartbeat inside its D1 window is one synchronous upsert here instead of a D1 write; the alarm
 * writes the shard's due nodes to D1 in one statement per FLUSH_CHUNK nodes before their deadline.
 *
 * `record` has no `await` before its storage writes, so under the input gate racing heartbeats of a
 * node apply one after another, and MAX keeps the latest whatever order they arrive in. Flushes run
 * one at a time (D1 calls open the gate); a heartbeat recorded during one stays dirty if it is newer
 * than what was written.
 */
export class NodePresence extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** The caller's test-clock offset, so clock-time deadlines map onto a real alarm. */
  private offsetMs = 0;
  private flushing: Promise<FlushResult> | null = null;
  /** The alarm last set (real ms, null: none; undefined: unknown), so most heartbeats touch no alarm. */
  private alarmAt: number | null | undefined = undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS presence (
        node_id TEXT PRIMARY KEY,
        beat_ms INTEGER NOT NULL,
        d1_ms INTEGER,
        due_ms INTEGER
      );
      CREATE INDEX IF NOT EXISTS presence_due ON presence(due_ms) WHERE due_ms IS NOT NULL;
    `);
  }

  /** A heartbeat D1 did not take: held here until its deadline (the end of D1's window). */
  async record(input: RecordInput): Promise<{ beat_ms: number; due_ms: number | null }> {
    const req = recordInput.parse(input);
    this.offsetMs = req.atMs - Date.now();
    const held = this.hold([req]).get(req.nodeId)!;
    if (held.due_ms !== null) await this.schedule();
    return held;
  }

  /** Several held heartbeats at once (an isolate's batch for this shard): one call, one alarm check. */
  async recordMany(input: RecordManyInput): Promise<{ held: number }> {
    const { beats } = recordManyInput.parse(input);
    this.offsetMs = Math.max(...beats.map((b) => b.atMs)) - Date.now();
    let held = 0;
    for (const row of this.hold(beats).values()) if (row.due_ms !== null) held++;
    if (held > 0) await this.schedule();
    return { held };
  }

  /**
   * Beats into storage, synchronously (atomic under the input gate), in two statements whatever their
   * number (issue 41: a SELECT and an upsert per beat were most of a shard's CPU under heartbeat load).
   * Per node: the latest beat; what D1 holds only grows (a beat not newer than it is not held); a held
   * beat's deadline is the earliest of the stored one and this beat's, as this request's read of D1
   * may be older than the stored one and the deadline must hold for the oldest value D1 could show.
   * The upsert takes the earliest deadline for every beat, then the second statement drops it where
   * the beat turns out not to be held. (Within one batch, a node listed twice keeps the earlier of its
   * deadlines even if its first beat was not held: sooner is always safe; isolates send one per node.)
   */
  private hold(beats: readonly RecordInput[]): Map<string, { beat_ms: number; due_ms: number | null }> {
    const rows = JSON.stringify(beats.map((b) => [b.nodeId, b.atMs, b.d1Ms, flushDeadline(b.d1Ms, b.atMs)]));
    const out = new Map<string, { beat_ms: number; due_ms: number | null }>();
    const upserted = this.sql.exec<{ node_id: string; beat_ms: number; due_ms: number | null }>(
      `INSERT INTO presence (node_id, beat_ms, d1_ms, due_ms)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]')
       FROM json_each(?1) WHERE true
       ON CONFLICT (node_id) DO UPDATE SET
         beat_ms = MAX(beat_ms, excluded.beat_ms),
         d1_ms = CASE WHEN d1_ms IS NULL THEN excluded.d1_ms WHEN excluded.d1_ms IS NULL THEN d1_ms ELSE MAX(d1_ms, excluded.d1_ms) END,
         due_ms = MIN(COALESCE(due_ms, excluded.due_ms), excluded.due_ms)
       RETURNING node_id, beat_ms, due_ms`,
      rows,
    );
    for (const r of upserted) out.set(r.node_id, { beat_ms: r.beat_ms, due_ms: r.due_ms });
    const released = this.sql.exec<{ node_id: string }>(
      `UPDATE presence SET due_ms = NULL
       WHERE node_id IN (SELECT json_extract(value, '$[0]') FROM json_each(?1))
         AND due_ms IS NOT NULL AND d1_ms IS NOT NULL AND beat_ms <= d1_ms
       RETURNING node_id`,
      rows,
    );
    for (const r of released) out.get(r.node_id)!.due_ms = null;
    return out;
  }

  /** The latest heartbeat this shard holds for each listed node (nodes it never saw are left out). */
  async latest(input: LatestInput): Promise<PresenceBeat[]> {
    const { nodeIds } = latestInput.parse(input);
    if (nodeIds.length === 0) return [];
    return this.sql
      .exec<{ node_id: string; beat_ms: number }>(
        `SELECT node_id, beat_ms FROM presence WHERE node_id IN (SELECT value FROM json_each(?))`,
        JSON.stringify(nodeIds),
      )
      .toArray()
      .map((r): PresenceBeat => ({ node_id: r.node_id, beat_ms: r.beat_ms }));
  }

  /** Writes held heartbeats to D1: those due within FLUSH_AHEAD_MS of `now`, or all of them. */
  async flush(input: FlushInput): Promise<FlushResult> {
    const req = flushInput.parse(input);
    this.offsetMs = req.now - Date.now();
    // One flush at a time; a second caller waits for the running one, then runs its own (it may want `all`).
    while (this.flushing) await this.flushing.catch(() => undefined);
    this.flushing = this.runFlush(req.now, req.all);
    try {
      return await this.flushing;
    } finally {
      this.flushing = null;
      await this.schedule();
    }
  }

  override async alarm(): Promise<void> {
    this.alarmAt = undefined; // it fired: whatever comes next is set again
    const now = (await loadClock(this.env)).nowMs();
    try {
      await this.flush({ now });
    } catch (err) {
      // Keep the deadline: try again soon rather than relying on the alarm's own backoff.
      console.error("node presence: flush failed", err);
      this.alarmAt = Date.now() + RETRY_MS;
      await this.ctx.storage.setAlarm(this.alarmAt);
    }
  }

  private async runFlush(now: number, all: boolean): Promise<FlushResult> {
    const due = this.sql
      .exec<{ node_id: string; beat_ms: number }>(
        all
          ? `SELECT node_id, beat_ms FROM presence WHERE due_ms IS NOT NULL ORDER BY due_ms`
          : `SELECT node_id, beat_ms FROM presence WHERE due_ms IS NOT NULL AND due_ms <= ? ORDER BY due_ms`,
        ...(all ? [] : [now + FLUSH_AHEAD_MS]),
      )
      .toArray();
    for (let i = 0; i < due.length; i += FLUSH_CHUNK) {
      const chunk = due.slice(i, i + FLUSH_CHUNK);
      const values = JSON.stringify(chunk.map((r) => [r.node_id, new Date(r.beat_ms).toISOString()]));
      // Only ever forward: a heartbeat D1 took meanwhile (a newer window) is not overwritten.
      await this.env.DB.prepare(
        `UPDATE nodes SET last_heartbeat_at = v.at
         FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS at FROM json_each(?1)) AS v
         WHERE nodes.id = v.id AND (nodes.last_heartbeat_at IS NULL OR nodes.last_heartbeat_at < v.at)`,
      )
        .bind(values)
        .run();
      // Written: D1 holds at least these beats now. A newer beat recorded during the write stays due.
      // One statement for the chunk, as in hold.
      this.sql.exec(
        `UPDATE presence SET d1_ms = MAX(COALESCE(d1_ms, v.beat), v.beat),
           due_ms = CASE WHEN beat_ms > v.beat THEN v.beat + ?2 END
         FROM (SELECT json_extract(value, '$.node_id') AS id, json_extract(value, '$.beat_ms') AS beat FROM json_each(?1)) AS v
         WHERE presence.node_id = v.id`,
        JSON.stringify(chunk),
        PRESENCE_WINDOW_MS,
      );
    }
    const held = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM presence WHERE due_ms IS NOT NULL`).one().n;
    return { flushed: due.length, held };
  }

  /** One alarm at the earliest deadline, mapped from clock time to real time; none when nothing is held. */
  private async schedule() {
    const next = this.sql.exec<{ m: number | null }>(`SELECT MIN(due_ms) AS m FROM presence WHERE due_ms IS NOT NULL`).one().m;
    if (next === null) {
      if (this.alarmAt !== null) await this.ctx.storage.deleteAlarm();
      this.alarmAt = null;
      return;
    }
    // A minute before the deadline (the run takes everything due within FLUSH_AHEAD_MS anyway).
    const at = Math.max(Date.now(), next - FLUSH_AHEAD_MS / 5 - this.offsetMs);
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt === null || this.alarmAt > at) {
      this.alarmAt = at;
      await this.ctx.storage.setAlarm(at);
    }
  }
}
