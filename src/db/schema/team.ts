import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Team-as-Agent state keyed by task id. The task row itself belongs to the tasks feature; until it
 * carries `team_spec`/`gate` these tables hold them (the frozen spec is set-if-null, once per task).
 */
export const teamSpecs = sqliteTable("team_specs", {
  taskId: text("task_id").primaryKey(),
  employeeId: text("employee_id").notNull(),
  // The frozen, validated spec. Set once (`WHERE spec IS NULL`), never changed afterwards.
  spec: text("spec", { mode: "json" }).$type<Record<string, unknown>>(),
  specFrozenAt: text("spec_frozen_at"),
  gate: text("gate", { mode: "json" }).$type<Record<string, unknown>>(),
  // Why no team was formed ({reason, role, detail, audited}); null when a spec was frozen.
  refusal: text("refusal", { mode: "json" }).$type<Record<string, unknown>>(),
  // The frozen acceptance criteria the verifier judges against.
  goal: text("goal", { mode: "json" })
    .$type<{ title: string; acceptance_criteria: string[]; workspace?: { key: string; files: Record<string, string> } }>()
    .notNull(),
  createdAt: text("created_at").notNull(),
});

/** One row per round of a task; `state` is the round composer's state, `version` its optimistic lock. */
export const teamRounds = sqliteTable(
  "team_rounds",
  {
    id: text("id").primaryKey(),
    taskId: text("task_id").notNull(),
    roundNo: integer("round_no").notNull(),
    phase: text("phase").notNull(),
    state: text("state", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    version: integer("version").notNull(),
    startedAt: text("started_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    endedAt: text("ended_at"),
  },
  (t) => [uniqueIndex("team_rounds_task_round_idx").on(t.taskId, t.roundNo), index("team_rounds_phase_idx").on(t.phase, t.updatedAt)],
);

/**
 * Every version a round moved to. Each state change inserts its (round, version) in the same batch:
 * two writers that read the same version collide on this key and the loser's whole batch rolls back.
 */
export const teamRoundVersions = sqliteTable(
  "team_round_versions",
  {
    roundId: text("round_id").notNull(),
    version: integer("version").notNull(),
    cause: text("cause").notNull(),
    at: text("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.roundId, t.version] })],
);

/**
 * TaskPackets handed between roles. A leg is (task, round, from_role, to_role); slot 0 is the leg's
 * first packet, slots 1..99 the `.01`..`.99` ones. A new packet_id takes the next slot; the same
 * packet_id overwrites its own slot. `body` is the packet's JSON as stored, re-validated on read.
 */
export const teamPackets = sqliteTable(
  "team_packets",
  {
    taskId: text("task_id").notNull(),
    roundNo: integer("round_no").notNull(),
    fromRole: text("from_role").notNull(),
    toRole: text("to_role").notNull(),
    slot: integer("slot").notNull(),
    packetId: text("packet_id").notNull(),
    body: text("body").notNull(),
    // The stage whose member token stored it (so a stage is graded only on its own packets).
    writtenBy: text("written_by").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.taskId, t.roundNo, t.fromRole, t.toRole, t.slot] }),
    uniqueIndex("team_packets_leg_packet_idx").on(t.taskId, t.roundNo, t.fromRole, t.toRole, t.packetId),
    check("team_packets_slot_range", sql`${t.slot} BETWEEN 0 AND 99`),
  ],
);

export const EVIDENCE_GRADES = ["full", "mcp_only", "none"] as const;
export type EvidenceGrade = (typeof EVIDENCE_GRADES)[number];

export const FAULT_SIDES = ["member", "runtime", "platform", "unknown"] as const;
export type FaultSide = (typeof FAULT_SIDES)[number];

/**
 * The role ledger: one append-only row per stage (triggers refuse UPDATE and DELETE), chained per
 * task by SHA-256 (`hash` covers the row and `prev_hash`). `UNIQUE(task_id, prev_hash)` keeps the
 * chain from forking when two stages of one task append at once. Usage columns are NULL when the
 * runtime reported nothing: unknown is not zero.
 */
export const roleTurns = sqliteTable(
  "role_turns",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    taskId: text("task_id").notNull(),
    roundNo: integer("round_no").notNull(),
    role: text("role").notNull(),
    stage: text("stage").notNull(),
    stageId: text("stage_id").notNull().unique(),
    memberId: text("member_id"),
    jobId: text("job_id"),
    requestedRuntime: text("requested_runtime").notNull(),
    requestModel: text("request_model").notNull(),
    runtimeUsed: text("runtime_used"),
    responseModel: text("response_model"),
    provider: text("provider"),
    failover: integer("failover", { mode: "boolean" }),
    effort: text("effort"),
    packets: text("packets", { mode: "json" }).$type<string[]>().notNull(),
    evidenceGrade: text("evidence_grade", { enum: EVIDENCE_GRADES }).notNull(),
    outcome: text("outcome").notNull(),
    failureEdge: text("failure_edge"),
    faultSide: text("fault_side", { enum: FAULT_SIDES }),
    configFingerprintHard: text("config_fingerprint_hard").notNull(),
    inputTokens: integer("input_tokens"),
    outputTokens: integer("output_tokens"),
    cacheReadInputTokens: integer("cache_read_input_tokens"),
    cacheCreationInputTokens: integer("cache_creation_input_tokens"),
    usageLegs: integer("usage_legs"),
    costUsd: real("cost_usd"),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [uniqueIndex("role_turns_chain_idx").on(t.taskId, t.prevHash), index("role_turns_task_idx").on(t.taskId, t.seq)],
);
