import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import type { PresentedToken } from "../lib/auth";
import { liveSubjectSql } from "../lib/credentials";
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

/**
 * A heartbeat in one round trip: record it, move the acknowledgement watermark (never backwards,
 * never past the node's newest event, so a bad `ack_through` cannot swallow future events), and
 * read what is still pending: not acknowledged and not confirmed by a webhook push. For a node the
 * caller has authenticated.
 */
export async function heartbeat(db: Db, nodeId: string, ackThrough: number | undefined, now: Date, limit = 100): Promise<Beat> {
  const beat = await runHeartbeat(db, nodeId, null, ackThrough, now, limit);
  if (beat) return beat;
  // Nothing was recorded: the node is suspended (or gone). Say which, as every node write does.
  assertNotSuspended(await getNode(db, nodeId));
  return { pending_events: [], has_more: false };
}

/**
 * The same heartbeat for a presented node token not yet checked (issue 8's benchmark path): both
 * statements also require the token to be a live node credential of this node (the rule of
 * `authenticate` in lib/auth.ts), so the heartbeat is one D1 round trip with no credential read
 * before it. Null when the token did not pass (or the node is gone): nothing was written, and the
 * caller authenticates the usual way to give the exact 401/403.
 */
export async function heartbeatWithToken(
  db: Db,
  nodeId: string,
  token: PresentedToken,
  ackThrough: number | undefined,
  now: Date,
  limit = 100,
): Promise<Beat | null> {
  return runHeartbeat(db, nodeId, token, ackThrough, now, limit);
}

interface PendingRow {
  id: number;
  type: string;
  payload: string;
  created_at: string;
}

async function runHeartbeat(
  db: Db,
  nodeId: string,
  token: PresentedToken | null,
  ackThrough: number | undefined,
  now: Date,
  limit: number,
): Promise<Beat | null> {
  const sql = token ? HEARTBEAT_WITH_TOKEN : HEARTBEAT;
  const params = [nodeId, now.toISOString(), ackThrough ?? 0, limit + 1, ...(token ? [token.credential_id, token.secret_hash] : [])];
  const [updated, pending] = await db.$client.batch([
    db.$client.prepare(sql.update).bind(...params.slice(0, sql.updateParams)),
    db.$client.prepare(sql.pending).bind(...params),
  ]);
  // Nothing written: the token did not pass, or the node is gone or suspended (the caller says which).
  if (updated!.meta.changes === 0) return null;
  return beatOf(pending!.results as PendingRow[], limit);
}

/**
 * What is still pending for a node, read only: a long-poll heartbeats once, when it starts, and
 * re-reads only this while it waits (a write every half second for 25 s was all D1 load, no news).
 */
export async function pendingEvents(db: Db, nodeId: string, limit = 100): Promise<Beat> {
  // The heartbeat's own read: ?1 node id, ?4 page size + 1 (?2 and ?3 are the update's).
  const { results } = await db.$client
    .prepare(HEARTBEAT.pending)
    .bind(nodeId, null, null, limit + 1)
    .all<PendingRow>();
  return beatOf(results, limit);
}

/**
 * Takes what is pending for a node and counts it as delivered (the /a2a long-poll and event stream,
 * whose EvoMap clients never acknowledge): one batch reads the first `limit` pending events and moves
 * the node's acknowledgement watermark to the last of them. D1 runs a batch as one transaction, so
 * the read and the move see the same rows, and two racing takes never hand out the same event.
 */
export async function takePendingEvents(db: Db, nodeId: string, limit = 100): Promise<Beat> {
  const [pending] = await db.$client.batch([
    db.$client.prepare(HEARTBEAT.pending).bind(nodeId, null, null, limit + 1),
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
 * The heartbeat's two statements as plain SQL text with numbered parameters, built once (drizzle's
 * builder on this path cost a fair share of its CPU, as on the dialog path). Parameters: ?1 node id,
 * ?2 now, ?3 ack_through, ?4 page size + 1, ?5 credential id, ?6 secret hash (the token variant).
 */
function heartbeatSql(guard: string) {
  // A suspended node's heartbeat records nothing and delivers nothing (the caller answers 403).
  const update = `UPDATE nodes SET last_heartbeat_at = ?2,
      acked_through = MAX(acked_through, MIN(?3, (SELECT COALESCE(MAX(id), 0) FROM node_events WHERE node_id = ?1)))
    WHERE id = ?1 AND suspended_at IS NULL${guard}`;
  const pending = `SELECT id, type, payload, created_at FROM node_events
    WHERE node_id = ?1 AND id > (SELECT acked_through FROM nodes WHERE id = ?1 AND suspended_at IS NULL) AND delivered_at IS NULL${guard}
    ORDER BY id LIMIT ?4`;
  // D1 wants exactly as many bound values as the statement's highest parameter number.
  return { update, pending, updateParams: guard ? 6 : 3 };
}
const HEARTBEAT = heartbeatSql("");
// ?1 node id, ?2 page size. The scalar subqueries read the watermark as the statement starts.
const PENDING_PAGE = `SELECT id FROM node_events WHERE node_id = ?1 AND delivered_at IS NULL
    AND id > (SELECT acked_through FROM nodes WHERE id = ?1) ORDER BY id LIMIT ?2`;
const TAKE = `UPDATE nodes SET acked_through = (SELECT MAX(id) FROM (${PENDING_PAGE}))
    WHERE id = ?1 AND EXISTS (${PENDING_PAGE})`;
const HEARTBEAT_WITH_TOKEN = heartbeatSql(` AND ${liveSubjectSql("node", "?5", "?6", "?2")} = ?1`);
