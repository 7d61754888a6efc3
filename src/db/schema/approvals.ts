import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Four outcomes besides `pending`, kept apart everywhere: `expired` (the TTL passed; callers treat
 * it as a denial) and `no_channel` (nobody could decide at request time; fail-closed) are not denials
 * by a person and are never reported as one.
 */
export const APPROVAL_STATUSES = ["pending", "approved", "denied", "expired", "no_channel"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export const APPROVAL_CHANNELS = ["slack", "webhook"] as const;
export type ApprovalChannel = (typeof APPROVAL_CHANNELS)[number];

/** One human decision asked for by code, bound to the exact action by `action_hash`. */
export const approvals = sqliteTable(
  "approvals",
  {
    // Paging order (newest first) without a second index on a timestamp.
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull().unique(),
    actionKind: text("action_kind").notNull(),
    subject: text("subject").notNull(),
    params: text("params", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    // SHA-256 (hex) of the canonical JSON of {kind, subject, params}.
    actionHash: text("action_hash").notNull(),
    evidence: text("evidence", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    status: text("status", { enum: APPROVAL_STATUSES }).notNull(),
    requestedBy: text("requested_by").notNull(),
    requestedAt: text("requested_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    // The channels it was sent to at request time (`[]` when only the API can decide it).
    channels: text("channels", { mode: "json" }).$type<ApprovalChannel[]>().notNull(),
    decidedBy: text("decided_by"),
    decidedVia: text("decided_via"),
    decidedAt: text("decided_at"),
    note: text("note"),
    // Single use: set once by the code that carries the approved action out.
    consumedAt: text("consumed_at"),
    consumedBy: text("consumed_by"),
  },
  (t) => [index("approvals_status_idx").on(t.status, t.expiresAt)],
);
export type ApprovalRow = typeof approvals.$inferSelect;
