import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
