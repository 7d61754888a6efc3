import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const REROUTE_PROPOSAL_STATUSES = ["pending", "approved", "denied", "expired", "no_channel", "action_changed"] as const;
export type RerouteProposalStatus = (typeof REROUTE_PROPOSAL_STATUSES)[number];

export interface ProposalEvidence {
  samples: number;
  reject_rate: number;
  needs_human_rate: number;
  oscillations: number;
  sample_task_ids: string[];
  sibling: { agent: string; samples: number; reject_rate: number };
  lookback_days: number;
}

/** D5 reroute proposals; every one goes through the ApprovalBroker (`topology_reroute`). */
export const topologyProposals = sqliteTable(
  "topology_proposals",
  {
    id: text("id").primaryKey(),
    taskClass: text("task_class").notNull(),
    fromAgent: text("from_agent").notNull(),
    toAgent: text("to_agent").notNull(),
    evidence: text("evidence", { mode: "json" }).$type<ProposalEvidence>().notNull(),
    approvalId: text("approval_id").notNull(),
    status: text("status", { enum: REROUTE_PROPOSAL_STATUSES }).notNull(),
    createdAt: text("created_at").notNull(),
    resolvedAt: text("resolved_at"),
  },
  (t) => [
    index("topology_proposals_edge_idx").on(t.taskClass, t.fromAgent, t.createdAt),
    index("topology_proposals_status_idx").on(t.status),
  ],
);
export type ProposalRow = typeof topologyProposals.$inferSelect;

export const OVERRIDE_STATUSES = ["active", "confirmed", "rolled_back"] as const;
export type OverrideStatus = (typeof OVERRIDE_STATUSES)[number];

/**
 * Routing overrides: (task_class, from_agent) → to_agent, created only from an approved proposal.
 * `active` is under observation, `confirmed` stays in force, `rolled_back` routes as before.
 */
export const routingOverrides = sqliteTable(
  "routing_overrides",
  {
    id: text("id").primaryKey(),
    proposalId: text("proposal_id").notNull().unique(),
    approvalId: text("approval_id").notNull(),
    taskClass: text("task_class").notNull(),
    fromAgent: text("from_agent").notNull(),
    toAgent: text("to_agent").notNull(),
    status: text("status", { enum: OVERRIDE_STATUSES }).notNull(),
    approvedAt: text("approved_at").notNull(),
    approvedBy: text("approved_by"),
    observeUntil: text("observe_until").notNull(),
    baselineRejectRate: real("baseline_reject_rate").notNull(),
    baselineSamples: integer("baseline_samples").notNull(),
    extensions: integer("extensions").notNull().default(0),
    resolvedAt: text("resolved_at"),
    resolution: text("resolution"),
  },
  (t) => [
    // At most one override in force per edge: the apply step's conditional insert relies on it.
    uniqueIndex("routing_overrides_in_force_idx")
      .on(t.taskClass, t.fromAgent)
      .where(sql`status IN ('active', 'confirmed')`),
    index("routing_overrides_status_idx").on(t.status),
  ],
);
export type OverrideRow = typeof routingOverrides.$inferSelect;

/**
 * The D5 driver's single row (id = 1): when it last ticked, the lease that serialises ticks, and how
 * much of the settled goal tasks' history is folded into `topology_evidence_days`.
 */
export const topologyDriver = sqliteTable("topology_driver", {
  id: integer("id").primaryKey(),
  lastTickAt: text("last_tick_at"),
  leaseUntil: text("lease_until"),
  leaseToken: text("lease_token"),
  // Day counters hold whole days in [folded_from, folded_through) (UTC day boundaries).
  foldedFrom: text("folded_from"),
  foldedThrough: text("folded_through"),
});

/**
 * Evidence counters per UTC day of settlement, folded by the D5 tick (never by a settle, so with D5 off
 * nothing here is written). Whole past days only; the window's partial first day and everything not
 * yet folded are counted from `tasks` directly, so the evidence stays exact. Column order matters:
 * the fold is an INSERT … SELECT.
 */
export const topologyEvidenceDays = sqliteTable(
  "topology_evidence_days",
  {
    day: text("day").notNull(),
    agent: text("agent").notNull(),
    taskClass: text("task_class").notNull(),
    samples: integer("samples").notNull(),
    rejects: integer("rejects").notNull(),
    needsHuman: integer("needs_human").notNull(),
    oscillations: integer("oscillations").notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.agent, t.taskClass] })],
);

/**
 * One row (id = 1) whose `token` changes, by trigger, in the same statement as any write to what the
 * D5 tick reads besides the evidence: settings, operator credentials (kind, role, expiry, revocation),
 * approvals (status, expiry), reroute proposals, routing overrides and the org (`reports_to`). A tick
 * that read those at token T may reuse what it read while the token is still T; its claim checks that
 * in the same batch. A random token rather than a counter, so a database restored to an earlier state
 * never repeats a token with other contents behind it.
 */
export const topologyInputs = sqliteTable("topology_inputs", {
  id: integer("id").primaryKey(),
  token: text("token").notNull(),
});
