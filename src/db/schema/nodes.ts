import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Swarm nodes (seed 004): open agents that propose, deliberate and vote. A node authenticates with
 * a `node` credential (its `node_secret`), whose subject is the node id.
 */
export const nodes = sqliteTable(
  "nodes",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    modelTier: integer("model_tier").notNull(),
    reputation: real("reputation").notNull(),
    credentialId: text("credential_id").notNull(),
    webhookUrl: text("webhook_url"),
    // Only an admin sets this (PATCH /v1/admin/nodes/:id); pushes and re-election need it.
    webhookVerified: integer("webhook_verified", { mode: "boolean" }).notNull().default(false),
    // HMAC-SHA256 key for pushes: shown once at registration, kept because signing needs it.
    webhookSecret: text("webhook_secret"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    lastHeartbeatAt: text("last_heartbeat_at"),
    lastDialogAt: text("last_dialog_at"),
    cooldownUntil: text("cooldown_until"),
    // Every pending event with an id ≤ this has been acknowledged by a heartbeat.
    ackedThrough: integer("acked_through").notNull().default(0),
    // Set by an admin (PATCH /v1/admin/nodes/:id {suspended}); the /a2a heartbeat then answers
    // `suspended` and the node's facade writes are refused until an admin lifts it.
    suspendedAt: text("suspended_at"),
  },
  (t) => [index("nodes_reputation_idx").on(t.reputation), index("nodes_credential_idx").on(t.credentialId)],
);

export const PUSH_STATES = ["pending", "delivered", "failed"] as const;
export type PushState = (typeof PUSH_STATES)[number];

/**
 * A node's pending events (`council_invite`, `council_vote`, …), delivered at least once: returned by
 * every heartbeat until acknowledged (`ack_through`), or taken off the list by a confirmed push.
 * Ids grow in commit order (D1 serialises writes), so a cursor over them never skips an event.
 */
export const nodeEvents = sqliteTable(
  "node_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    nodeId: text("node_id").notNull(),
    type: text("type").notNull(),
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: text("created_at").notNull(),
    dedupeKey: text("dedupe_key").unique(),
    // null: the node has no verified webhook, the heartbeat is its only channel.
    pushState: text("push_state", { enum: PUSH_STATES }),
    deliveredAt: text("delivered_at"),
  },
  (t) => [index("node_events_node_idx").on(t.nodeId, t.id)],
);

/**
 * Where reputation comes from (the `reputation` config section, src/nodes/reputation.ts): credits
 * for verified work and participation, penalties, decay, and an admin's hand.
 */
export const REPUTATION_SOURCES = [
  "task_completed",
  "session_participation",
  "vote_cast",
  "proposal_approved",
  "claim_abandoned",
  "scan_failed",
  "proposal_vetoed",
  "veto_lapsed",
  "decay",
  "admin",
] as const;
export type ReputationSource = (typeof REPUTATION_SOURCES)[number];

/**
 * The reputation ledger: one row per credit, penalty or decay step, with what was asked (`requested`),
 * what was applied after the daily cap and the [0, 100] clamp (`delta`, 0 when capped away) and the
 * node's reputation before and after. (node, source, reference) is unique, so a repeat never counts
 * twice; `batch_id` ties the row to the statements of its batch (the node update and the event).
 */
export const reputationLedger = sqliteTable(
  "reputation_ledger",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    batchId: text("batch_id").notNull(),
    nodeId: text("node_id").notNull(),
    source: text("source", { enum: REPUTATION_SOURCES }).notNull(),
    reference: text("reference").notNull(),
    // The UTC day (YYYY-MM-DD) the row counts toward, for the per-source daily caps.
    day: text("day").notNull(),
    requested: real("requested").notNull(),
    delta: real("delta").notNull(),
    reputationBefore: real("reputation_before").notNull(),
    reputationAfter: real("reputation_after").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("reputation_ledger_reference_idx").on(t.nodeId, t.source, t.reference),
    index("reputation_ledger_day_idx").on(t.nodeId, t.source, t.day),
    index("reputation_ledger_batch_idx").on(t.batchId),
    index("reputation_ledger_node_idx").on(t.nodeId, t.id),
  ],
);
