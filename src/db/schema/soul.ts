import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * An employee's SOUL (seed 003 §4.5–4.6, §5.4, §12.2): its persona, kept as Worker state. Every
 * version is a row (`soul_versions`); `soul_heads` is the current pointer and the soul guard's
 * fingerprint, kept apart from the content row (and from any workspace the runner renders it into).
 * At most 10 backup versions are kept besides the current one (older ones are pruned; never the current).
 * Sources: `consolidation` is the SOUL rewritten shorter when it met its 50 KB cap (soul-consolidate.ts).
 */
export const SOUL_SOURCES = ["bootstrap", "operator", "gvu", "rollback", "consolidation"] as const;
export type SoulSource = (typeof SOUL_SOURCES)[number];
/**
 * A GVU version's observation state (§4.8); null for versions nobody observes (operator, bootstrap,
 * rollback, consolidation). `superseded`: an operator replaced the SOUL while the version was still observed, so
 * it was never judged (and is not rolled back over the operator's text).
 */
export const SOUL_VERSION_STATUSES = ["observing", "confirmed", "rolled_back", "superseded"] as const;
export type SoulVersionStatus = (typeof SOUL_VERSION_STATUSES)[number];

export const soulVersions = sqliteTable(
  "soul_versions",
  {
    employeeId: text("employee_id").notNull(),
    version: integer("version").notNull(),
    content: text("content").notNull(),
    sha256: text("sha256").notNull(),
    source: text("source", { enum: SOUL_SOURCES }).notNull(),
    reason: text("reason"),
    /** The version this one was made from (null for the first). */
    parentVersion: integer("parent_version"),
    createdAt: text("created_at").notNull(),
    createdBy: text("created_by").notNull(),
    // GVU (legacy path) only:
    status: text("status", { enum: SOUL_VERSION_STATUSES }),
    roundId: text("round_id"),
    /** The text the version appended, as the OPRO history and L2/L4 read it. */
    proposal: text("proposal"),
    preMetrics: text("pre_metrics", { mode: "json" }).$type<Record<string, unknown>>(),
    postMetrics: text("post_metrics", { mode: "json" }).$type<Record<string, unknown>>(),
    observationEnd: text("observation_end"),
    extensions: integer("extensions").notNull().default(0),
    /** The SOUL before this version (what a rollback restores), through soul-crypto: AES-256-GCM with EVOLUTION_KEY, else plain. */
    rollbackDiff: text("rollback_diff"),
    decidedAt: text("decided_at"),
    decision: text("decision", { mode: "json" }).$type<Record<string, unknown>>(),
  },
  (t) => [primaryKey({ columns: [t.employeeId, t.version] }), index("soul_versions_status_idx").on(t.status, t.observationEnd)],
);
export type SoulVersionRow = typeof soulVersions.$inferSelect;

/** The current SOUL of each employee and its fingerprint (the soul guard's separately stored hash). */
export const soulHeads = sqliteTable("soul_heads", {
  employeeId: text("employee_id").primaryKey(),
  version: integer("version").notNull(),
  sha256: text("sha256").notNull(),
  updatedAt: text("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});
export type SoulHeadRow = typeof soulHeads.$inferSelect;

export const GVU_ROUND_STATUSES = [
  "generating",
  "judging",
  "awaiting_approval",
  "applied",
  "abandoned",
  "skipped",
  "failed",
  "discarded",
] as const;
export type GvuRoundStatus = (typeof GVU_ROUND_STATUSES)[number];

/**
 * One legacy GVU round (seed 003 §4.2), started from an emergency evolution request. All its state is
 * here, so a Worker restart or a runner crash loses nothing: the owner handler of its generator and
 * judge jobs (`gvu_round`) moves it on, keyed by the job it waits for (`pending_job_id`).
 */
export const gvuRounds = sqliteTable(
  "gvu_rounds",
  {
    id: text("id").primaryKey(),
    employeeId: text("employee_id").notNull(),
    requestId: text("request_id").notNull().unique(),
    status: text("status", { enum: GVU_ROUND_STATUSES }).notNull(),
    /** The SOUL version the round started from; the round applies only onto it. */
    baseVersion: integer("base_version").notNull(),
    maxGenerations: integer("max_generations").notNull(),
    /** Generations finished (each a generator reply verified, or refused). */
    attempts: integer("attempts").notNull().default(0),
    /** `generate` or `judge`: which job the round waits for. */
    phase: text("phase"),
    pendingJobId: text("pending_job_id"),
    /** The proposal under verification (the generator's parsed reply). */
    proposal: text("proposal", { mode: "json" }).$type<Record<string, unknown>>(),
    gradients: text("gradients", { mode: "json" }).$type<Record<string, unknown>[]>().notNull(),
    /** Every generation's verdict, in order (layer, reason, judge score): the round's evidence. */
    generations: text("generations", { mode: "json" }).$type<Record<string, unknown>[]>().notNull(),
    triggerContext: text("trigger_context").notNull(),
    outcome: text("outcome", { mode: "json" }).$type<Record<string, unknown>>(),
    appliedVersion: integer("applied_version"),
    approvalId: text("approval_id"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    endedAt: text("ended_at"),
  },
  (t) => [index("gvu_rounds_employee_idx").on(t.employeeId, t.createdAt), index("gvu_rounds_status_idx").on(t.status)],
);
export type GvuRoundRow = typeof gvuRounds.$inferSelect;
