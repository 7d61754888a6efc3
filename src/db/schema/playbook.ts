import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The AEE playbook (seed 003 §12.3–12.5): each employee's entries in the gene shape, the rounds that
 * evolve them, the jobs those rounds run, the rejection telemetry per gate, and the per-entry settle
 * windows. Entries are never deleted (`retired` is the archive).
 */
export const PLAYBOOK_ENTRY_STATES = ["probation", "active", "stale", "retired"] as const;

/**
 * One playbook entry, every gene field a column (src/evolution/playbook.ts is the schema of record;
 * lists and histories are JSON). `version` counts content changes (the entry's own field).
 */
export const playbookEntries = sqliteTable(
  "playbook_entries",
  {
    agentId: text("agent_id").notNull(),
    entryId: text("entry_id").notNull(),
    category: text("category", { enum: ["repair", "optimize", "innovate"] }).notNull(),
    signalsMatch: text("signals_match", { mode: "json" }).$type<string[]>().notNull(),
    content: text("content").notNull(),
    evalCases: text("eval_cases", { mode: "json" }).$type<string[]>().notNull(),
    assertions: text("assertions", { mode: "json" }).$type<Record<string, unknown>[]>().notNull(),
    failureHistory: text("failure_history", { mode: "json" }).$type<Record<string, unknown>[]>().notNull(),
    applications: text("applications", { mode: "json" }).$type<Record<string, unknown>[]>().notNull(),
    successStreak: integer("success_streak").notNull(),
    derivedFrom: text("derived_from", { mode: "json" }).$type<Record<string, unknown>[]>().notNull(),
    state: text("state", { enum: PLAYBOOK_ENTRY_STATES }).notNull(),
    stateReason: text("state_reason"),
    stateSince: text("state_since").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    version: integer("version").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.entryId] }), index("playbook_entries_state_idx").on(t.agentId, t.state)],
);
export type PlaybookEntryRow = typeof playbookEntries.$inferSelect;

/**
 * Each employee's playbook head: `revision` is bumped by every write to its entries, guarded on the
 * revision the writer read, so two writers (a commit, a settle, an operator's retire) never lose
 * each other's change. Not part of the playbook's bytes.
 */
export const playbooks = sqliteTable("playbooks", {
  agentId: text("agent_id").primaryKey(),
  revision: integer("revision").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export const AEE_ROUND_STATUSES = ["running", "awaiting_approval", "committed", "abandoned", "skipped"] as const;
export type AeeRoundStatus = (typeof AEE_ROUND_STATUSES)[number];
export const AEE_ROUND_STEPS = ["champion_cases", "champion_judge", "generate", "candidate_cases", "judge", "approval", "done"] as const;
export type AeeRoundStep = (typeof AEE_ROUND_STEPS)[number];

/**
 * One AEE round (§12.5), started from an emergency evolution request. All its state is here: the
 * pure round (`state`, src/evolution/aee-round.ts), the step it waits on, the cases it measures, the
 * candidate in flight and the commit it prepared, so it survives a Worker restart; `version` is its
 * optimistic lock (each step lands only on the version it read).
 */
export const aeeRounds = sqliteTable(
  "aee_rounds",
  {
    id: text("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    roundSeq: integer("round_seq").notNull(),
    requestId: text("request_id"),
    status: text("status", { enum: AEE_ROUND_STATUSES }).notNull(),
    step: text("step", { enum: AEE_ROUND_STEPS }).notNull(),
    /** The inner-loop attempt the step belongs to (0 for the champion bootstrap). */
    attempt: integer("attempt").notNull(),
    state: text("state", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** The mistake the round digests (the trigger's prediction error report). */
    context: text("context").notNull(),
    /** The round's cases, the held-out ones among them, and the runtimes its jobs run on. */
    plan: text("plan", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** The champion's case results and Measure vector, once taken. */
    champion: text("champion", { mode: "json" }).$type<Record<string, unknown>>(),
    /** The candidate in flight: its delta, Gate result, case results and Measure vector. */
    candidate: text("candidate", { mode: "json" }).$type<Record<string, unknown>>(),
    /** With `[evolution] require_approval`: the exact diff asked for, when it was prepared, the approval. */
    approvalId: text("approval_id"),
    commitPlan: text("commit_plan", { mode: "json" }).$type<Record<string, unknown>>(),
    endReason: text("end_reason"),
    version: integer("version").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    endedAt: text("ended_at"),
  },
  (t) => [
    uniqueIndex("aee_rounds_seq_idx").on(t.agentId, t.roundSeq),
    uniqueIndex("aee_rounds_request_idx").on(t.requestId),
    index("aee_rounds_status_idx").on(t.status, t.updatedAt),
  ],
);
export type AeeRoundRow = typeof aeeRounds.$inferSelect;

export const AEE_JOB_PURPOSES = ["champion_case", "champion_judge", "generator", "candidate_case", "judge", "settle_case"] as const;
export type AeeJobPurpose = (typeof AEE_JOB_PURPOSES)[number];

/**
 * The runner jobs of rounds and settle windows, one row each: what it was for and, once it ended,
 * what it yielded (a case verdict, a judge score, a generator answer). Ended once, keyed by the job.
 */
export const aeeJobs = sqliteTable(
  "aee_jobs",
  {
    jobId: text("job_id").primaryKey(),
    /** The round (`aer_…`) or settle item (`pst_…`) waiting for it. */
    ownerId: text("owner_id").notNull(),
    agentId: text("agent_id").notNull(),
    purpose: text("purpose", { enum: AEE_JOB_PURPOSES }).notNull(),
    attempt: integer("attempt").notNull(),
    caseRef: text("case_ref"),
    status: text("status", { enum: ["dispatched", "done"] }).notNull(),
    outcome: text("outcome", { mode: "json" }).$type<Record<string, unknown>>(),
    createdAt: text("created_at").notNull(),
    endedAt: text("ended_at"),
  },
  (t) => [index("aee_jobs_owner_idx").on(t.ownerId, t.purpose, t.attempt)],
);
export type AeeJobRow = typeof aeeJobs.$inferSelect;

/** Rejection telemetry (§12.5 telemetry.rs): every refused candidate, by the gate (check) that refused it. */
export const aeeRejections = sqliteTable(
  "aee_rejections",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    agentId: text("agent_id").notNull(),
    roundId: text("round_id").notNull(),
    attempt: integer("attempt").notNull(),
    stage: text("stage").notNull(),
    gate: text("gate").notNull(),
    reason: text("reason").notNull(),
    detail: text("detail").notNull(),
    at: text("at").notNull(),
  },
  (t) => [uniqueIndex("aee_rejections_attempt_idx").on(t.roundId, t.attempt), index("aee_rejections_agent_idx").on(t.agentId, t.gate)],
);

export const SETTLE_STATUSES = ["pending", "measuring", "accepted", "rolled_back", "superseded", "missing"] as const;
export type SettleStatus = (typeof SETTLE_STATUSES)[number];

/**
 * A committed entry's observation window (§12.5.4 pending.rs): due at `due_at`, then judged by its own
 * linked cases alone (`measuring` while they run). `item` is the SettleItem of src/evolution/settle.ts.
 */
export const playbookSettleItems = sqliteTable(
  "playbook_settle_items",
  {
    id: text("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    entryId: text("entry_id").notNull(),
    roundId: text("round_id").notNull(),
    item: text("item", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    status: text("status", { enum: SETTLE_STATUSES }).notNull(),
    dueAt: text("due_at").notNull(),
    /** Bumped by each measurement, so a repeat's jobs never mix with the earlier one's. */
    attempt: integer("attempt").notNull().default(0),
    verdict: text("verdict", { mode: "json" }).$type<Record<string, unknown>>(),
    createdAt: text("created_at").notNull(),
    settledAt: text("settled_at"),
  },
  (t) => [index("playbook_settle_due_idx").on(t.status, t.dueAt), index("playbook_settle_agent_idx").on(t.agentId, t.entryId)],
);
export type PlaybookSettleRow = typeof playbookSettleItems.$inferSelect;

/**
 * Which live entries a conversation turn's prompt carried (§12.4), written with the turn. Once the
 * conversation has closed, the `playbook` tick turns them into each entry's `applications` (outcome
 * from the conversation's prediction error) and stamps `recorded_at`: one application per entry and
 * conversation, however many of its turns carried the entry.
 */
export const playbookInjections = sqliteTable(
  "playbook_injections",
  {
    conversationId: text("conversation_id").notNull(),
    turn: integer("turn").notNull(),
    entryId: text("entry_id").notNull(),
    agentId: text("agent_id").notNull(),
    at: text("at").notNull(),
    recordedAt: text("recorded_at"),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.turn, t.entryId] }),
    index("playbook_injections_pending_idx").on(t.recordedAt, t.conversationId),
  ],
);
