import { and, asc, eq, gt, isNull, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { nodeEvents } from "../db/schema";

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

/**
 * A heartbeat in one round trip: record it, move the acknowledgement watermark (never backwards,
 * never past the node's newest event, so a bad `ack_through` cannot swallow future events), and
 * read what is still pending: not acknowledged and not confirmed by a webhook push.
 */
export async function heartbeat(db: Db, nodeId: string, ackThrough: number | undefined, now: Date, limit = 100) {
  const at = now.toISOString();
  const ack = ackThrough ?? 0;
  const [, rows] = await db.batch([
    batchable(
      db,
      sql`
      UPDATE nodes SET last_heartbeat_at = ${at},
        acked_through = MAX(acked_through, MIN(${ack}, (SELECT COALESCE(MAX(id), 0) FROM node_events WHERE node_id = ${nodeId})))
      WHERE id = ${nodeId}`,
    ),
    db
      .select()
      .from(nodeEvents)
      .where(
        and(
          eq(nodeEvents.nodeId, nodeId),
          gt(nodeEvents.id, sql`(SELECT acked_through FROM nodes WHERE id = ${nodeId})`),
          isNull(nodeEvents.deliveredAt),
        ),
      )
      .orderBy(asc(nodeEvents.id))
      .limit(limit + 1),
  ]);
  return {
    pending_events: rows.slice(0, limit).map(toView),
    has_more: rows.length > limit,
  };
}

export function toView(r: typeof nodeEvents.$inferSelect): PendingEventView {
  return { id: String(r.id), type: r.type, payload: r.payload, created_at: r.createdAt };
}
