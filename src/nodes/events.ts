import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import type { PresentedToken } from "../lib/auth";
import { liveSubjectSql } from "../lib/credentials";
import { planBeat, PRESENCE_WINDOW_MS } from "./presence";
import type { PresenceRecorder } from "./presence-store";
import { assertNotSuspended, getNode } from "./registry";

export interface PendingEventView {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  created_at: string;
}

/** An inserted pending event and whether it should also be pushed to the node's webhook. */
export interface InsertedNodeEvent {
  id: number;
  node_id: string;
  push_state: string | null;
}

const IN_CHUNK = 80;

function pushStateExpr(): SQL {
  return sql`CASE WHEN n.webhook_verified = 1 AND n.webhook_url IS NOT NULL THEN 'pending' ELSE NULL END`;
}

/**
 * Statements (for the caller's batch) that add one pending event per listed node, in one
 * INSERT … SELECT per chunk of ids, so the push decision (a verified webhook) is read in the same
 * statement. Unknown ids are skipped. `dedupe` makes a repeat of the same notice a no-op.
 */
export function notifyNodesStatements(
  db: Db,
  nodeIds: readonly string[],
  event: { type: string; payload: Record<string, unknown>; dedupe?: string },
  at: Date,
) {
  const unique = [...new Set(nodeIds)];
  const statements = [];
  for (let i = 0; i < unique.length; i += IN_CHUNK) {
    const ids = unique.slice(i, i + IN_CHUNK);
    statements.push(
      batchable<InsertedNodeEvent>(
        db,
        sql`
        INSERT INTO node_events (node_id, type, payload, created_at, dedupe_key, push_state)
        SELECT n.id, ${event.type}, ${JSON.stringify(event.payload)}, ${at.toISOString()},
               ${event.dedupe ? sql`${event.dedupe} || ':' || n.id` : sql`NULL`}, ${pushStateExpr()}
        FROM nodes n WHERE n.id IN (${sql.join(
          ids.map((id) => sql`${id}`),
          sql`, `,
        )})
        ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING id, node_id, push_state`,
        "all",
      ),
    );
  }
  return statements;
}

/** One pending event for every node selected by `from` (a SQL fragment yielding `node_id`s as `n.id`). */
export function notifySelectedStatement(
  db: Db,
  selectIds: SQL,
  event: { type: string; payload: Record<string, unknown>; dedupe: string },
  at: Date,
) {
  return batchable<InsertedNodeEvent>(
    db,
    sql`
    INSERT INTO node_events (node_id, type, payload, created_at, dedupe_key, push_state)
    SELECT n.id, ${event.type}, ${JSON.stringify(event.payload)}, ${at.toISOString()}, ${event.dedupe} || ':' || n.id, ${pushStateExpr()}
    FROM nodes n WHERE n.id IN (${selectIds})
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id, node_id, push_state`,
    "all",
  );
}

export interface Beat {
  pending_events: PendingEventView[];
  has_more: boolean;
}

/** A heartbeat's answer, and where the heartbeat went (benchmarks and tests; not in any response). */
export interface RecordedBeat extends Beat {
  /** `d1`: D1's `last_heartbeat_at` took it (first of a window); `presence`: a NodePresence shard holds it. */
  recorded: "d1" | "presence";
}

/**
 * A heartbeat (issue 26): read the node's state and its pending page in one read-only D1 statement, then
 * write D1 only when a query needs it (src/nodes/presence.ts): the first heartbeat of a window, or an
 * `ack_through` that moves the acknowledgement watermark (never backwards, never past the node's
 * newest event, so a bad `ack_through` cannot swallow future events). Otherwise a presence shard
 * holds the heartbeat and writes it to D1 before any window query could tell. The page returned is
 * what is still pending after the acknowledgement: not acknowledged and not confirmed by a webhook
 * push. For a node the caller has authenticated.
 */
export async function heartbeat(
  db: Db,
  nodeId: string,
  ackThrough: number | undefined,
  now: Date,
  presence: PresenceRecorder,
): Promise<RecordedBeat> {
  const beat = await runHeartbeat(db, nodeId, null, ackThrough, now, presence);
  if (beat) return beat;
  // Nothing was recorded: the node is suspended (or gone). Say which, as every node write does.
  assertNotSuspended(await getNode(db, nodeId));
  return { pending_events: [], has_more: false, recorded: "d1" };
}

/**
 * The same heartbeat for a presented node token not yet checked (issue 8's benchmark path): the read
 * and any write also require the token to be a live node credential of this node (the rule of
 * `authenticate` in lib/auth.ts), so there is no credential read before them. Null when the token
 * did not pass (or the node is gone or suspended): nothing was recorded, and the caller
 * authenticates the usual way to give the exact 401/403.
 */
export async function heartbeatWithToken(
  db: Db,
  nodeId: string,
  token: PresentedToken,
  ackThrough: number | undefined,
  now: Date,
  presence: PresenceRecorder,
): Promise<RecordedBeat | null> {
  return runHeartbeat(db, nodeId, token, ackThrough, now, presence);
}

interface PendingRow {
  id: number;
  type: string;
  payload: string;
  created_at: string;
}

/** A row of the heartbeat's read: the node's state (the event's columns null), or one pending event (the state's null). */
interface BeatRow {
  last_heartbeat_at: string | null;
  acked_through: number;
  newest: number;
  id: number | null;
  type: string | null;
  payload: string | null;
  created_at: string | null;
}

async function runHeartbeat(
  db: Db,
  nodeId: string,
  token: PresentedToken | null,
  ackThrough: number | undefined,
  now: Date,
  presence: PresenceRecorder,
): Promise<RecordedBeat | null> {
  const q = token ? BEAT_WITH_TOKEN : BEAT;
  // Without an acknowledgement the read needs no newest event id (issue 41: one cursor less per beat).
  const read = ackThrough === undefined ? q.readNoAck : q.read;
  const at = now.toISOString();
  const nowMs = now.getTime();
  // ?1 node, ?2 now, ?3 ack_through, ?4 credential id, ?5 secret hash, ?6 window start (the page size is
  // in the text: see beatSql).
  const params = [
    nodeId,
    at,
    ackThrough ?? 0,
    token?.credential_id ?? null,
    token?.secret_hash ?? null,
    new Date(nowMs - PRESENCE_WINDOW_MS).toISOString(),
  ];
  // One statement: the node's state (the row with a null event id; none when the token did not pass,
  // or the node is gone or suspended), then its pending page. SQL promises no order across a UNION
  // ALL, so the page is put in id order here (at most BEAT_PAGE + 1 rows).
  const { results } = await db.$client
    .prepare(read.text)
    .bind(...params.slice(0, read.params))
    .all<BeatRow>();
  const node = results.find((r) => r.id === null);
  // Nothing read: the token did not pass, or the node is gone or suspended (the caller says which).
  if (!node) return null;
  const pending = (results.filter((r) => r.id !== null) as PendingRow[]).sort((a, b) => a.id - b.id);
  const d1Ms = node.last_heartbeat_at === null ? null : Date.parse(node.last_heartbeat_at);
  const plan = planBeat({ d1LastBeatMs: d1Ms, ackedThrough: node.acked_through, newestEventId: node.newest }, ackThrough, nowMs);
  const page = beatOf(pending, BEAT_PAGE);
  if (plan.writeBeat || plan.moveAck) {
    const written = await db.$client
      .prepare(q.write.text)
      .bind(...params.slice(0, q.write.params))
      .all<{ last_heartbeat_at: string | null }>();
    const row = written.results[0];
    // D1 took this heartbeat's time.
    if (row?.last_heartbeat_at === at) return { ...page, recorded: "d1" };
    // A racing heartbeat of the same window wrote first (no row: nothing left to write), or this
    // one only moved the watermark: presence holds the time. The heartbeat counts as of its read,
    // which passed the token and suspension checks; the deadline from an older D1 value is earlier.
    const d1Now = row ? row.last_heartbeat_at : node.last_heartbeat_at;
    return { ...page, recorded: await holdOrWrite(db, presence, nodeId, now, d1Now === null ? null : Date.parse(d1Now)) };
  }
  const recorded = await holdOrWrite(db, presence, nodeId, now, d1Ms);
  return { ...page, recorded };
}

/**
 * Presence holds the heartbeat; if its shard cannot be reached (overloaded, a deploy), D1 takes it as
 * it did before presence, so a heartbeat is never lost to the optimisation.
 */
async function holdOrWrite(db: Db, presence: PresenceRecorder, nodeId: string, now: Date, d1Ms: number | null) {
  try {
    await presence.record(nodeId, now.getTime(), d1Ms);
    return "presence" as const;
  } catch (err) {
    console.error("node presence: record failed, heartbeat written to D1", err);
    await db.$client
      .prepare(`UPDATE nodes SET last_heartbeat_at = ?2 WHERE id = ?1 AND (last_heartbeat_at IS NULL OR last_heartbeat_at < ?2)`)
      .bind(nodeId, now.toISOString())
      .run();
    return "d1" as const;
  }
}

/**
 * What is still pending for a node, read only: a long-poll heartbeats once, when it starts, and
 * re-reads only this while it waits (a write every half second for 25 s was all D1 load, no news).
 */
export async function pendingEvents(db: Db, nodeId: string, limit = BEAT_PAGE): Promise<Beat> {
  const { results } = await db.$client
    .prepare(PENDING)
    .bind(nodeId, limit + 1)
    .all<PendingRow>();
  return beatOf(results, limit);
}

/**
 * Takes what is pending for a node and counts it as delivered (the /a2a long-poll and event stream,
 * whose EvoMap clients never acknowledge): one batch reads the first `limit` pending events and moves
 * the node's acknowledgement watermark to the last of them. D1 runs a batch as one transaction, so
 * the read and the move see the same rows, and two racing takes never hand out the same event.
 */
export async function takePendingEvents(db: Db, nodeId: string, limit = BEAT_PAGE): Promise<Beat> {
  const [pending] = await db.$client.batch([
    db.$client.prepare(PENDING).bind(nodeId, limit + 1),
    db.$client.prepare(TAKE).bind(nodeId, limit),
  ]);
  return beatOf(pending!.results as PendingRow[], limit);
}

function beatOf(rows: PendingRow[], limit: number): Beat {
  return {
    pending_events: rows
      .slice(0, limit)
      .map((r) => ({ id: String(r.id), type: r.type, payload: JSON.parse(r.payload), created_at: r.created_at })),
    has_more: rows.length > limit,
  };
}

/**
 * A node's pending page, read only (the long-poll's re-reads and the /a2a take): ?1 node id, ?2 page
 * size + 1. A suspended node reads nothing. Plain SQL text built once, as on the heartbeat. Each
 * parameter is read through a constant subquery, so SQLite compiles the ordered page once
 * (docs/architecture.md "Hot-path SQL"); the plan is the same walk of `(node_id, id)`.
 */
const PENDING = `SELECT id, type, payload, created_at FROM node_events
    WHERE node_id = (SELECT ?1) AND id > (SELECT acked_through FROM nodes WHERE id = ?1 AND suspended_at IS NULL) AND delivered_at IS NULL
    ORDER BY id LIMIT (SELECT ?2)`;
// ?1 node id, ?2 page size. The scalar subqueries read the watermark as the statement starts.
const PENDING_PAGE = `SELECT id FROM node_events WHERE node_id = (SELECT ?1) AND delivered_at IS NULL
    AND id > (SELECT acked_through FROM nodes WHERE id = ?1) ORDER BY id LIMIT (SELECT ?2)`;
const TAKE = `UPDATE nodes SET acked_through = (SELECT MAX(id) FROM (${PENDING_PAGE}))
    WHERE id = ?1 AND EXISTS (${PENDING_PAGE})`;

/** Pending events a heartbeat answers with at most (`has_more` says whether more wait). */
const BEAT_PAGE = 100;

/**
 * The heartbeat's read and its write (when planBeat asks for one), plain SQL with the numbered
 * parameters of runHeartbeat. The read computes the watermark the acknowledgement leads to, so its
 * page is already what remains pending after the write.
 */
function beatSql(guard: string) {
  // Correlated with the node row, not `node_id = ?1`: MAX by index is an ORDER BY to the planner, and a
  // planner that reads a bound value has SQLite compile the statement again on every run.
  const newest = `(SELECT COALESCE(MAX(e.id), 0) FROM node_events e WHERE e.node_id = nodes.id)`;
  const live = `id = ?1 AND suspended_at IS NULL${guard}`;
  // The state and the pending page in one statement (one D1 round trip, one statement to run): the
  // node's row (at most one, by primary key; none when the token did not pass or the node is gone or
  // suspended), then its events past the watermark the acknowledgement leads to, in id order (the
  // (node_id, id) index gives the order, so the page stops at its size however long the backlog).
  // The node's row is a materialized CTE that the page reads through scalar subqueries, and the page
  // size is a literal: no term the planner orders by holds a parameter, so SQLite compiles the
  // statement once, not on every beat (docs/architecture.md, "Hot-path SQL").
  const page = (mark: string) => `UNION ALL
    SELECT * FROM (SELECT NULL, NULL, NULL, e.id, e.type, e.payload, e.created_at FROM node_events AS e
      WHERE e.node_id = (SELECT id FROM s) AND e.id > (SELECT ${mark} FROM s) AND e.delivered_at IS NULL
      ORDER BY e.id LIMIT ${BEAT_PAGE + 1})`;
  const read = `WITH s AS MATERIALIZED (
      SELECT id, last_heartbeat_at, acked_through, newest, MAX(acked_through, MIN(?3, newest)) AS mark
      FROM (SELECT id, last_heartbeat_at, acked_through, ${newest} AS newest FROM nodes WHERE ${live}))
    SELECT last_heartbeat_at, acked_through, newest, NULL AS id, NULL AS type, NULL AS payload, NULL AS created_at FROM s
    ${page("mark")}`;
  // The same read when no acknowledgement is given (most heartbeats): the watermark stays where it is,
  // so the newest event id, which only bounds an acknowledgement, is not read (planBeat moves nothing
  // with ack 0).
  const readNoAck = `WITH s AS MATERIALIZED (SELECT id, last_heartbeat_at, acked_through FROM nodes WHERE ${live})
    SELECT last_heartbeat_at, acked_through, 0 AS newest, NULL AS id, NULL AS type, NULL AS payload, NULL AS created_at FROM s
    ${page("acked_through")}`;
  // A window's first heartbeat takes last_heartbeat_at unless a racing one of the same window did
  // (then, with no watermark to move, nothing is written: D1 takes one write per window); the test
  // clock going back resets it, as before presence.
  const write = `UPDATE nodes SET acked_through = MAX(acked_through, MIN(?3, ${newest})),
      last_heartbeat_at = CASE WHEN last_heartbeat_at IS NULL OR last_heartbeat_at <= ?6 OR last_heartbeat_at > ?2 THEN ?2
        ELSE last_heartbeat_at END
    WHERE ${live} AND (last_heartbeat_at IS NULL OR last_heartbeat_at <= ?6 OR last_heartbeat_at > ?2 OR acked_through < MIN(?3, ${newest}))
    RETURNING last_heartbeat_at`;
  return {
    read: { text: read, params: highestParam(read) },
    readNoAck: { text: readNoAck, params: highestParam(readNoAck) },
    write: { text: write, params: highestParam(write) },
  };
}
const BEAT = beatSql("");
const BEAT_WITH_TOKEN = beatSql(` AND ${liveSubjectSql("node", "?4", "?5", "?2")} = ?1`);

/** D1 wants exactly as many bound values as the statement's highest parameter number (gaps allowed). */
function highestParam(text: string): number {
  return Math.max(0, ...Array.from(text.matchAll(/\?(\d+)/g), (m) => Number(m[1])));
}
