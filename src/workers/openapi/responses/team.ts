import { archivedFile, refusedFile } from "../../../jobs/attachments-job";
import * as z from "zod";
import { ROUTED_BY, SETTLED_TASK_STATUSES } from "../../../db/schema";
import type { BudgetStatus } from "../../../durable-objects/task-budget";
import { DEGRADE_STEPS } from "../../../tasks/dispatch/team-fields";
import type { Evaluation } from "../../../team/acceptance";
import { STAGE_KINDS } from "../../../team/budget";
import type { CascadeReport } from "../../../team/cascade";
import { MODEL_FAMILIES } from "../../../team/catalog";
import { ROUND_PHASES, type RoundState, type StageRecord } from "../../../team/composer";
import type { effectiveTeam } from "../../../team/employee-team";
import { EFFORT_LEVELS } from "../../../team/effort";
import { GATE_REASONS, GATE_SIGNALS, type GateDecision } from "../../../team/gate";
import type { GateMeasurementRecord } from "../../../team/gate-measure";
import type { handoffPacket } from "../../../team/handoff";
import type { memberStatus } from "../../../team/member-status";
import { GATE_MODES, TEAM_ROLES } from "../../../team/settings";
import { TEAM_RUNTIMES } from "../../../jobs/team-vocabulary";
import { SPEC_REFUSALS, type SpecProblem, type TeamSpec } from "../../../team/validate";
import { timestamp } from "./common";

/** One object member per team role. */
function perRole<T extends z.ZodType>(schema: T) {
  return z.object({ planner: schema, executor: schema, verifier: schema, utility: schema });
}

const LEVELS = ["employee", "global", "default"] as const;

/** A validated, frozen team spec (src/team/validate.ts). */
export const teamSpecSchema = z.object({
  version: z.literal(1),
  executor_fanout: z.number().int(),
  gate: z.enum(GATE_MODES),
  roles: perRole(
    z.object({
      runtime: z.enum(TEAM_RUNTIMES),
      model: z.string(),
      family: z.enum(MODEL_FAMILIES),
      effort: z.enum(EFFORT_LEVELS).optional(),
    }),
  ),
}) satisfies z.ZodType<TeamSpec>;

const specProblemSchema = z.object({
  reason: z.enum(SPEC_REFUSALS),
  role: z.enum(TEAM_ROLES),
  detail: z.string(),
}) satisfies z.ZodType<SpecProblem>;

/** What the `[team]` cascade reports instead of refusing (src/team/cascade.ts, capacity.ts). */
export const cascadeReportSchema = z.discriminatedUnion("token", [
  z.object({ token: z.literal("gate_unknown_fallback_auto"), value: z.string(), level: z.enum(LEVELS) }),
  z.object({ token: z.literal("executor_fanout_clamped"), value: z.number(), clamped_to: z.number(), level: z.enum(LEVELS) }),
  z.object({ token: z.literal("effort_without_binding"), role: z.enum(TEAM_ROLES), value: z.string(), level: z.enum(LEVELS) }),
  z.object({ token: z.literal("executor_files_do_not_persist"), role: z.literal("executor"), runtime: z.enum(TEAM_RUNTIMES) }),
  z.object({ token: z.literal("ephemeral_capacity_short"), needed: z.number(), limit: z.number(), detail: z.string() }),
]) satisfies z.ZodType<CascadeReport>;

const signalReading = z.object({ holds: z.boolean(), unmeasured: z.boolean() });
const gateSignals = z.object({
  volume: signalReading,
  context: signalReading,
  capability_gap: signalReading,
  long_horizon: signalReading,
  held: z.number().int(),
}) satisfies z.ZodType<Record<(typeof GATE_SIGNALS)[number], { holds: boolean; unmeasured: boolean }> & { held: number }>;

/** What the gate's inputs were measured from (src/team/gate-measure.ts), kept with its decision. */
const gateMeasuredSchema = z
  .object({
    artifacts: z.array(z.string()).describe("Paths the goal's title and criteria name (the first 32)"),
    artifacts_total: z.number().int(),
    items: z
      .array(z.object({ artifact: z.string(), criteria: z.array(z.number().int()) }))
      .describe("The independent work items: one artifact each, with the criteria (by index) that name it"),
    hubs: z
      .array(
        z.object({
          criterion: z.number().int(),
          why: z.enum(["names_several_artifacts", "refers_to_other_items"]),
          artifacts: z.array(z.string()),
        }),
      )
      .describe("Dependency hubs: criteria that tie items together"),
    context: z.object({ estimated_tokens: z.number().int(), window_tokens: z.number().int().nullable() }),
    irreversible: z.array(z.string()).describe("Irreversible operations the council scan found in the goal (pattern ids)"),
    conversation: z.enum(["none", "live_reply_pending", "live_idle", "closed", "batch"]),
    unmeasured: z.array(z.enum(["independent_items", "dependency_hubs", "fits_one_context", "produces_artifacts"])),
    hints: z
      .object({ applied: z.array(z.string()), ignored: z.array(z.string()) })
      .describe("The caller's signals/exclusions: applied when they kept the goal solo, ignored otherwise"),
  })
  .describe("What the gate's inputs were measured from") satisfies z.ZodType<GateMeasurementRecord>;

/** The gate's decision (src/team/gate.ts). */
export const gateDecisionSchema = z.object({
  decision: z.enum(["solo", "team", "gray"]),
  reason: z.enum(GATE_REASONS),
  signals: gateSignals,
  effort_hint: z.enum(EFFORT_LEVELS).optional(),
  measured: gateMeasuredSchema.optional(),
}) satisfies z.ZodType<GateDecision>;

/**
 * The gate as a goal's answer and the task's team side give it: the gate's decision, or, when no team
 * was formed, solo with why (a refusal token, `team_not_configured`, `team_disabled`).
 */
export const answeredGateSchema = z.union([
  gateDecisionSchema,
  z.object({
    decision: z.literal("solo"),
    reason: z.union([z.enum(SPEC_REFUSALS), z.enum(["team_not_configured", "team_disabled"])]),
    signals: gateSignals,
    measured: gateMeasuredSchema.optional(),
  }),
]);

/** The `[team]` section as written (globally or on an employee): every field optional, nothing defaulted. */
const roleSettingsWritten = z.object({ runtime: z.string().optional(), model: z.string().optional(), effort: z.string().optional() });
export const teamSettingsWrittenSchema = z.object({
  enabled: z.boolean().optional(),
  executor_fanout: z.number().int().optional(),
  gate: z.string().optional(),
  roles: z
    .object({
      planner: roleSettingsWritten.optional(),
      executor: roleSettingsWritten.optional(),
      verifier: roleSettingsWritten.optional(),
      utility: roleSettingsWritten.optional(),
    })
    .optional(),
});

const cascadedRole = z.object({
  runtime: z.string().optional(),
  model: z.string(),
  effort: z.string().optional(),
  bound: z.boolean(),
  sources: z.object({
    runtime: z.enum([...LEVELS, "employee_model", "catalog"]),
    model: z.enum([...LEVELS, "employee_model", "matrix"]),
    effort: z.enum([...LEVELS, "employee_model"]).optional(),
  }),
});

const effectiveTeamBase = {
  enabled: z.boolean(),
  enabled_source: z.enum(LEVELS),
  executor_fanout: z.number().int(),
  gate: z.enum(GATE_MODES),
  roles: perRole(cascadedRole),
  reports: z.array(cascadeReportSchema),
};

/** An employee's effective `[team]` (src/team/employee-team.ts): the cascade, and the spec it validates to or why not. */
export const effectiveTeamSchema = z.union([
  z.object({ ...effectiveTeamBase, valid: z.literal(true), spec: teamSpecSchema }),
  z.object({
    ...effectiveTeamBase,
    valid: z.literal(false),
    refusal: z.object({ reason: z.enum(SPEC_REFUSALS), role: z.enum(TEAM_ROLES), detail: z.string() }),
  }),
]) satisfies z.ZodType<Awaited<ReturnType<typeof effectiveTeam>>>;

const roundPlanSchema = z.object({
  planner: z.boolean(),
  executors: z.number().int(),
  repair: z.boolean(),
  utility: z.boolean(),
  verifier: z.literal(true),
});

const stageRecordSchema = z.object({
  stage_id: z.string(),
  kind: z.enum(STAGE_KINDS),
  role: z.enum([...TEAM_ROLES, "employee", "evaluator"]),
  status: z.enum(["pending", "waiting_admission", "dispatched", "completed", "failed"]),
  inputs: z.array(z.string()),
  replica_of: z.string().optional(),
  job_id: z.string().optional(),
  member_id: z.string().optional(),
  outputs: z.array(z.string()).optional(),
  runtime: z.string().optional(),
  model: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
}) satisfies z.ZodType<StageRecord>;

const evaluationSchema = z.object({
  source: z.enum(["evaluator", "unparseable"]),
  unparseable_reason: z.string().optional(),
  criteria: z.array(z.object({ id: z.number().int(), met: z.boolean(), reason: z.string(), judged: z.boolean() })),
  implicit_criterion: z.boolean(),
  unmet: z.array(z.number().int()),
  stage_one: z.enum(["absent", "passed", "repaired", "rejected"]),
  accepted: z.boolean(),
  fingerprint: z.string(),
}) satisfies z.ZodType<Evaluation>;

/** A team (or solo) round of a goal task, as the round composer keeps it (src/team/composer.ts). */
/** The record of an accepted team round's packet attachments archive (seed 002), as the round keeps it. */
const roundAttachmentsBase = { job_id: z.string(), round: z.number().int(), paths: z.array(z.string()), requested_at: timestamp };
const roundAttachmentsSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("pending"), ...roundAttachmentsBase }),
  z.object({
    status: z.literal("archived"),
    ...roundAttachmentsBase,
    job_id: z.string().optional(),
    recorded_at: timestamp,
    archived: z.array(archivedFile),
    refused: z.array(refusedFile),
  }),
  z.object({
    status: z.literal("failed"),
    ...roundAttachmentsBase,
    recorded_at: timestamp,
    error: z.object({ code: z.string(), reason: z.string().optional() }),
  }),
]);

export const teamRoundStateSchema = z.object({
  round_id: z.string(),
  task_id: z.string(),
  round_no: z.number().int(),
  mode: z.enum(["team", "gray", "solo"]),
  phase: z.enum(ROUND_PHASES),
  plan: roundPlanSchema.optional(),
  degrade_steps: z.array(z.enum(DEGRADE_STEPS)),
  solo_reason: z.string().optional(),
  stages: z.array(stageRecordSchema),
  subtasks: z.array(z.string()).optional(),
  regate: z.object({ decision: z.enum(["team", "solo"]), independent: z.number().int() }).optional(),
  verdict: z.enum(["PASS", "FAIL"]).optional(),
  verdict_source: z.enum(["verifier", "unparseable"]).optional(),
  verdict_reasons: z.array(z.string()).optional(),
  repaired: z.boolean().optional(),
  absorbed_failures: z.array(z.string()).optional(),
  evaluation: evaluationSchema.optional(),
  outcome: z
    .object({
      status: z.enum(["accepted", "rejected", "needs_human", "failed", "cancelled"]),
      reason: z.string(),
      detail: z.string().optional(),
      pause_class: z.enum(["no_progress", "budget_exhausted", "blocked_needs_decision", "infra", "unknown"]).optional(),
    })
    .optional(),
  attachments: roundAttachmentsSchema.optional(),
}) satisfies z.ZodType<RoundState>;

/** A task's spawn budget (the task-budget Durable Object's status). */
export const taskBudgetStatusSchema = z.object({
  limits: z
    .object({
      max_spawns_per_task: z.number().int(),
      max_turns_per_role: z.number().int(),
      degrade_order: z.array(z.enum(DEGRADE_STEPS)),
    })
    .nullable(),
  warnings: z.array(z.string()),
  spent: z.number(),
  held: z.number(),
  remaining: z.number().nullable(),
  // Each round's plan as the budget answered it, with what was left before it (`remaining_before`).
  rounds: z.array(
    z.union([
      z.object({
        round: z.number().int(),
        ok: z.literal(true),
        plan: roundPlanSchema,
        cost: z.number(),
        steps: z.array(z.enum(DEGRADE_STEPS)),
        remaining_before: z.number(),
      }),
      z.object({
        round: z.number().int(),
        ok: z.literal(false),
        reason: z.literal("budget_exhausted"),
        detail: z.string(),
        steps: z.array(z.enum(DEGRADE_STEPS)),
        remaining_before: z.number(),
      }),
    ]),
  ),
}) satisfies z.ZodType<BudgetStatus>;

/** `GET /v1/team/tasks/:id` (src/team/views.ts). */
export const teamTaskViewSchema = z.object({
  task_id: z.string(),
  employee_id: z.string().optional(),
  goal: z
    .object({
      title: z.string(),
      acceptance_criteria: z.array(z.string()),
      workspace: z.object({ key: z.string(), files: z.record(z.string(), z.string()) }).optional(),
    })
    .optional(),
  team_spec: teamSpecSchema.optional(),
  spec_frozen_at: timestamp.nullable().optional(),
  gate: answeredGateSchema.optional(),
  team_refused: z
    .object({
      reason: z.enum(SPEC_REFUSALS),
      role: z.enum(TEAM_ROLES),
      detail: z.string(),
      problems: z.array(specProblemSchema),
      reports: z.array(cascadeReportSchema),
      gate: gateDecisionSchema,
    })
    .optional(),
  rounds: z.array(teamRoundStateSchema.extend({ version: z.number().int(), started_at: timestamp, ended_at: timestamp.nullable() })),
  budget: taskBudgetStatusSchema.nullable(),
});

/** `POST /v1/team/handoff`: where the packet was kept. */
export const handoffSchema = z.object({
  leg: z.string(),
  slot: z.number().int(),
  packet_id: z.string(),
  path: z.string(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof handoffPacket>>>;

/** `GET /v1/team/member`: whether the member's round and stage still run. */
export const memberStatusSchema = z.object({
  task_id: z.string(),
  round: z.number().int(),
  round_id: z.string(),
  role: z.enum(TEAM_ROLES),
  stage_id: z.string(),
  round_phase: z.enum(ROUND_PHASES),
  stage_status: z.enum(["pending", "waiting_admission", "dispatched", "completed", "failed"]).nullable(),
  live: z.boolean(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof memberStatus>>>;

const goalBase = {
  task_id: z.string(),
  assigned_to: z.string(),
  routed_by: z.enum(ROUTED_BY),
  // What the loop's first step did: the round it started, or why it waits or ended.
  round: z
    .object({ round_id: z.string(), round: z.number().int(), mode: z.enum(["team", "gray", "solo"]), phase: z.enum(ROUND_PHASES) })
    .optional(),
  goal_loop: z
    .union([
      z.object({ state: z.literal("working") }),
      z.object({ state: z.literal("waiting"), reason: z.string() }),
      z.object({ state: z.literal("ended"), status: z.enum(SETTLED_TASK_STATUSES), reason: z.string() }),
      z.object({ state: z.literal("ended"), reason: z.enum(["settled", "unknown_task"]) }),
    ])
    .optional(),
};

/** `POST /v1/employees/:id/goals` (src/team/goal-request.ts): the task, the gate, and the team it formed or why not. */
export const goalAnswerSchema = z.union([
  // A team was formed: its frozen spec (and what the cascade reported).
  z.object({ ...goalBase, gate: gateDecisionSchema, team_spec: teamSpecSchema, reports: z.array(cascadeReportSchema).optional() }),
  // No team: `[team]` off, or the spec refused (said unless [team] was never configured).
  z.object({
    ...goalBase,
    gate: answeredGateSchema,
    team_refused: z.object({ reason: z.enum(SPEC_REFUSALS), role: z.enum(TEAM_ROLES), detail: z.string() }).optional(),
  }),
]);
