import { and, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { reputationLedger, type ReputationSource } from "../db/schema";
import { newId } from "../lib/ids";
import { creditOf, penaltyOf, type CreditSource, type PenaltySource, type ReputationConfig } from "./reputation-config";

/**
 * Reputation moves only through the ledger (`reputation_ledger`): each change is three statements
 * for the caller's batch, so it lands with the change that earned it or not at all:
 * 1. one INSERT … SELECT of the ledger rows, which reads the node's reputation and what the source
 *    already credited it today in the same statement (the daily cap holds under racing credits:
 *    D1 runs statements one at a time), computes the applied delta (capped, clamped to [0, 100]),
 *    and does nothing for a (node, source, reference) already in the ledger;
 * 2. the node update by exactly the deltas the insert wrote (found by the batch's id);
 * 3. one `node.reputation_changed` event per row that changed something, with before and after.
 * `grantedDelta` is the same rule as a pure function (tested on its own; the SQL follows it).
 */

const MAX = 100;
const DAY_MS = 86_400_000;

/** The UTC day a change counts toward for the daily caps. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/**
 * The change applied for a request of `requested` (signed): a credit is capped at what is left of
 * its source's daily cap (`creditedToday` already counted), then the result is clamped to [0, 100].
 */
export function grantedDelta(reputation: number, requested: number, cap: number | null, creditedToday: number): number {
  const capped = requested > 0 && cap !== null ? Math.min(requested, Math.max(0, cap - creditedToday)) : requested;
  return Math.min(MAX, Math.max(0, reputation + capped)) - reputation;
}

export interface ActivityFacts {
  created_at: string;
  last_heartbeat_at: string | null;
  last_dialog_at: string | null;
  /** The node's last earned credit (an admin's hand is not the node's activity). */
  last_credit_at: string | null;
}

/** The latest sign of life: registration, a heartbeat, a dialog or an earned credit. */
export function lastActiveAt(f: ActivityFacts): string {
  return [f.created_at, f.last_heartbeat_at, f.last_dialog_at, f.last_credit_at].reduce<string>(
    (a, b) => (b !== null && b > a ? b : a),
    f.created_at,
  );
}

/**
 * Decay for one day (≤ 0): a node inactive for `decay_after_days` loses `decay_per_day`, never
 * below the initial reputation (and a node already at or below it loses nothing).
 */
export function decayAmount(
  f: ActivityFacts & { reputation: number },
  nowMs: number,
  config: Pick<ReputationConfig, "decay_after_days" | "decay_per_day">,
  initial: number,
): number {
  if (nowMs - Date.parse(lastActiveAt(f)) < config.decay_after_days * DAY_MS) return 0;
  if (f.reputation <= initial) return 0;
  return -Math.min(config.decay_per_day, f.reputation - initial);
}

export interface Target {
  node_id: string;
  reference: string;
}

export interface ReputationChange {
  source: ReputationSource;
  /** The (node, reference) pairs to change: a list, or SQL selecting `node_id` and `reference` columns. */
  targets: readonly Target[] | SQL;
  /** The signed amount asked for; SQL may read the node row as `n`. */
  amount: number | SQL;
  /** A credit's daily cap for its source; null for penalties, decay and admin changes. */
  cap: number | null;
  /** A further condition (may read `n`): the change lands only with the work it is for. */
  when?: SQL;
  /** A suspended node earns nothing (penalties still apply). */
  earns: boolean;
  detail?: Record<string, unknown>;
}

function targetsSql(targets: readonly Target[] | SQL): SQL | null {
  if (!Array.isArray(targets)) return targets as SQL;
  if (targets.length === 0) return null;
  // One JSON parameter, not a compound SELECT (D1 allows only a few terms in one).
  const rows = JSON.stringify(targets.map((t) => [t.node_id, t.reference]));
  return sql`SELECT json_extract(j.value, '$[0]') AS node_id, json_extract(j.value, '$[1]') AS reference FROM json_each(${rows}) j`;
}

/**
 * The three statements of one ledger change (see the module comment); none when there is no
 * target. Each target node appears once per change (its before/after are read once).
 */
export function reputationStatements(db: Db, change: ReputationChange, now: Date): BatchItem<"sqlite">[] {
  const targets = targetsSql(change.targets);
  if (!targets) return [];
  const batch = newId("rep");
  const at = now.toISOString();
  const day = utcDay(now);
  const amount = typeof change.amount === "number" ? sql`${change.amount}` : change.amount;
  const today = sql`COALESCE((SELECT SUM(l.delta) FROM reputation_ledger l WHERE l.node_id = n.id AND l.source = ${change.source} AND l.day = ${day}), 0)`;
  const capped =
    change.cap === null
      ? sql`(${amount})`
      : sql`(CASE WHEN (${amount}) > 0 THEN MIN((${amount}), MAX(0, ${change.cap} - ${today})) ELSE (${amount}) END)`;
  const delta = sql`(MIN(${MAX}, MAX(0, n.reputation + ${capped})) - n.reputation)`;
  const detail = JSON.stringify(change.detail ?? {});
  return [
    batchable(
      db,
      sql`
      INSERT INTO reputation_ledger (batch_id, node_id, source, reference, day, requested, delta, reputation_before, reputation_after, created_at)
      SELECT ${batch}, n.id, ${change.source}, t.reference, ${day}, (${amount}), ${delta}, n.reputation, n.reputation + ${delta}, ${at}
      FROM (${targets}) t, nodes n
      WHERE n.id = t.node_id
        ${change.earns ? sql`AND n.suspended_at IS NULL` : sql``}
        ${change.when ? sql`AND (${change.when})` : sql``}
      ON CONFLICT (node_id, source, reference) DO NOTHING`,
    ),
    batchable(
      db,
      sql`
      UPDATE nodes SET
        reputation = reputation + (SELECT SUM(l.delta) FROM reputation_ledger l WHERE l.batch_id = ${batch} AND l.node_id = nodes.id),
        updated_at = ${at}
      WHERE id IN (SELECT node_id FROM reputation_ledger WHERE batch_id = ${batch} AND delta <> 0)`,
    ),
    batchable(
      db,
      sql`
      INSERT INTO events (type, subject, payload, created_at)
      SELECT 'node.reputation_changed', node_id,
        json_object('node_id', node_id, 'source', source, 'reference', reference, 'requested', requested, 'delta', delta,
          'capped', json(CASE WHEN requested > 0 AND delta < requested THEN 'true' ELSE 'false' END),
          'reputation_before', reputation_before, 'reputation_after', reputation_after, 'detail', json(${detail})), ${at}
      FROM reputation_ledger WHERE batch_id = ${batch} AND delta <> 0 ORDER BY id`,
    ),
  ];
}

/** A credit of `source` (its amount and daily cap from the config) for work that is done and checkable. */
export function creditStatements(
  db: Db,
  config: ReputationConfig,
  source: CreditSource,
  targets: readonly Target[] | SQL,
  now: Date,
  opts: { when?: SQL; detail?: Record<string, unknown> } = {},
) {
  const { amount, cap } = creditOf(config, source);
  if (amount === 0) return [];
  return reputationStatements(db, { source, targets, amount, cap, earns: true, ...opts }, now);
}

/** A penalty of `source` (not capped; clamped at 0). */
export function penaltyStatements(
  db: Db,
  config: ReputationConfig,
  source: PenaltySource,
  targets: readonly Target[] | SQL,
  now: Date,
  opts: { when?: SQL; detail?: Record<string, unknown> } = {},
) {
  const amount = penaltyOf(config, source);
  if (amount === 0) return [];
  return reputationStatements(db, { source, targets, amount: -amount, cap: null, earns: false, ...opts }, now);
}

/** An admin setting a node's reputation: a ledger row (`admin`) for the difference. */
export function adminSetStatements(db: Db, nodeId: string, value: number, by: string, now: Date) {
  return reputationStatements(
    db,
    {
      source: "admin",
      targets: [{ node_id: nodeId, reference: newId("adm") }],
      amount: sql`${value} - n.reputation`,
      cap: null,
      earns: false,
      detail: { by },
    },
    now,
  );
}

/** A page of a node's ledger, newest first (the public `GET /v1/nodes/:id/reputation`). */
export async function ledgerPage(db: Db, nodeId: string, q: { limit: number; cursor?: number }) {
  const rows = await db
    .select()
    .from(reputationLedger)
    .where(and(eq(reputationLedger.nodeId, nodeId), q.cursor !== undefined ? lt(reputationLedger.id, q.cursor) : undefined))
    .orderBy(desc(reputationLedger.id))
    .limit(q.limit + 1)
    .all();
  const page = rows.slice(0, q.limit);
  return {
    entries: page.map((r) => ({
      id: String(r.id),
      source: r.source,
      reference: r.reference,
      requested: r.requested,
      delta: r.delta,
      capped: r.requested > 0 && r.delta < r.requested,
      reputation_before: r.reputationBefore,
      reputation_after: r.reputationAfter,
      created_at: r.createdAt,
    })),
    next_cursor: rows.length > q.limit ? String(page[page.length - 1]!.id) : null,
  };
}

const LAST_CREDIT = sql`(SELECT MAX(l.created_at) FROM reputation_ledger l WHERE l.node_id = n.id AND l.delta > 0 AND l.source <> 'admin')`;

/**
 * Decay (the hourly council tick): every node inactive for `decay_after_days` (no heartbeat, dialog
 * or earned credit) above the initial reputation loses `decay_per_day`, once per UTC day (the day is
 * the ledger reference), never below the initial value. The SQL finds the candidates, `decayAmount`
 * decides, and each write checks again that the node is still inactive.
 */
export async function decayReputation(db: Db, now: Date, config: ReputationConfig, initial: number, limit = 500) {
  if (config.decay_per_day === 0) return { decayed: 0 };
  const cutoff = new Date(now.getTime() - config.decay_after_days * DAY_MS).toISOString();
  const day = utcDay(now);
  const inactive = sql`MAX(n.created_at, COALESCE(n.last_heartbeat_at, ''), COALESCE(n.last_dialog_at, ''), COALESCE(${LAST_CREDIT}, '')) <= ${cutoff}`;
  const rows = await db.all<ActivityFacts & { node_id: string; reputation: number }>(sql`
    SELECT n.id AS node_id, n.reputation, n.created_at, n.last_heartbeat_at, n.last_dialog_at, ${LAST_CREDIT} AS last_credit_at
    FROM nodes n
    WHERE n.reputation > ${initial} AND ${inactive}
      AND NOT EXISTS (SELECT 1 FROM reputation_ledger d WHERE d.node_id = n.id AND d.source = 'decay' AND d.reference = ${day})
    LIMIT ${limit}`);
  const statements: BatchItem<"sqlite">[] = [];
  let decayed = 0;
  for (const r of rows) {
    const amount = decayAmount(r, now.getTime(), config, initial);
    if (amount === 0) continue;
    decayed++;
    statements.push(
      ...reputationStatements(
        db,
        {
          source: "decay",
          targets: [{ node_id: r.node_id, reference: day }],
          // Never below the initial value, whatever moved since the read.
          amount: sql`MAX(${amount}, ${initial} - n.reputation)`,
          cap: null,
          earns: false,
          when: sql`n.reputation > ${initial} AND ${inactive}`,
          detail: { inactive_since: lastActiveAt(r) },
        },
        now,
      ),
    );
  }
  for (let i = 0; i < statements.length; i += 90) {
    const chunk = statements.slice(i, i + 90);
    await db.batch(chunk as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  }
  return { decayed };
}
