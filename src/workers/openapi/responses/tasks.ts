import * as z from "zod";
import {
  EVIDENCE_GRADES,
  FAULT_SIDES,
  PAUSE_CLASSES,
  ROUTED_BY,
  SETTLED_TASK_STATUSES,
  TASK_MODES,
  TASK_PRIORITIES,
  TASK_STATUSES,
  type TaskRoute,
} from "../../../db/schema";
import { DISPATCH_POLICIES } from "../../../tasks/dispatch/config";
import type { taskView } from "../../../tasks/view";
import type { BestRound } from "../../../team/acceptance";
import { ROUND_PHASES } from "../../../team/composer";
import { GATE_REASONS } from "../../../team/gate";
import type { goalLoopView } from "../../../team/goal-loop";
import type { roleTurnsView } from "../../../team/views";
import { timestamp } from "./common";
import { archivedFile, refusedFile } from "../../../jobs/attachments-job";
import type { TaskAttachmentsView } from "../../../team/attachments";
import { teamRoundStateSchema, teamTaskViewSchema } from "./team";

/**
 * How a task was routed, as recorded on it. `skipped_at_limit` (round_robin: the roster members
 * passed over because their dispatch window was full) is written by createTask but missing from the
 * `TaskRoute` type.
 */
export const taskRouteSchema = z.object({
  policy: z.enum(DISPATCH_POLICIES),
  fallback: z.string().optional(),
  override_id: z.string().optional(),
  roster: z.array(z.string()).optional(),
  job_id: z.string().optional(),
  skipped_at_limit: z.array(z.string()).optional(),
}) satisfies z.ZodType<TaskRoute>;

/** A task as the API shows it (src/tasks/view.ts). */
export const taskSchema = z.object({
  task_id: z.string(),
  title: z.string(),
  mode: z.enum(TASK_MODES),
  tags: z.array(z.string()),
  priority: z.enum(TASK_PRIORITIES),
  task_class: z.string(),
  acceptance_criteria: z.array(z.string()),
  assignee: z.string(),
  assigned_to: z.string(),
  routed_by: z.enum(ROUTED_BY),
  route: taskRouteSchema,
  status: z.enum(TASK_STATUSES),
  retry_count: z.number().int(),
  manual: z.boolean(),
  pause_class: z.enum(PAUSE_CLASSES).optional(),
  created_by: z.string(),
  created_at: timestamp,
  settled_at: timestamp.optional(),
  settled_by: z.string().nullable().optional(),
  /** The conversation the task came from (a team round's progress line goes there). */
  conversation_id: z.string().optional(),
}) satisfies z.ZodType<ReturnType<typeof taskView>>;

const roundRef = z.object({
  round_id: z.string(),
  round: z.number().int(),
  mode: z.enum(["team", "gray", "solo"]),
  phase: z.enum(ROUND_PHASES),
});

/** `POST /v1/tasks` (201): the route it took and, unless manual, the goal loop's first step. */
export const taskCreatedSchema = z.object({
  task_id: z.string(),
  assigned_to: z.string(),
  routed_by: z.enum(ROUTED_BY),
  task_class: z.string(),
  route: taskRouteSchema,
  manual: z.boolean(),
  // `[dispatch] policy = "role_team"` only: the gate's answer for the employee's team (src/team/role-team.ts).
  team: z
    .object({ gate: z.object({ decision: z.enum(["solo", "team", "gray"]), reason: z.union([z.enum(GATE_REASONS), z.string()]) }) })
    .optional(),
  // The round the loop started (or found running), else why it waits or ended (src/team/goal-request.ts `loopAnswer`).
  round: roundRef.optional(),
  goal_loop: z
    .union([
      z.object({ state: z.literal("working") }),
      z.object({ state: z.literal("waiting"), reason: z.string() }),
      z.object({ state: z.literal("ended"), status: z.enum(SETTLED_TASK_STATUSES), reason: z.string() }),
      z.object({ state: z.literal("ended"), reason: z.enum(["settled", "unknown_task"]) }),
    ])
    .optional(),
});

const bestRoundSchema = z.object({
  round_id: z.string(),
  round: z.number().int(),
  met: z.number().int().optional(),
  of: z.number().int().optional(),
  unmet: z.array(z.number().int()).optional(),
  verdict: z.enum(["PASS", "FAIL"]).optional(),
}) satisfies z.ZodType<BestRound>;

/** The goal loop as the task shows it (src/team/goal-loop.ts `goalLoopView`). */
export const goalLoopSchema = z.union([
  z.object({ manual: z.literal(true) }),
  z.object({
    manual: z.literal(false),
    state: z.enum(["ended", "working", "waiting"]),
    rounds_budget: z.number().int(),
    rounds_used: z.number().int(),
    rounds_left: z.number().int(),
    current_round: roundRef.optional(),
    last_evaluation: z
      .object({
        round: z.number().int(),
        source: z.enum(["evaluator", "unparseable"]),
        accepted: z.boolean(),
        met: z.number().int(),
        of: z.number().int(),
        unmet: z.array(z.number().int()),
        fingerprint: z.string(),
      })
      .optional(),
    best_round: bestRoundSchema.optional(),
  }),
]) satisfies z.ZodType<Awaited<ReturnType<typeof goalLoopView>>>;

/** One row of a task's role ledger (src/team/ledger.ts `roleTurnView`): usage only when measured. */
export const roleTurnSchema = z.object({
  seq: z.number().int(),
  task_id: z.string(),
  round: z.number().int(),
  role: z.string(),
  stage: z.string(),
  stage_id: z.string(),
  member_id: z.string().nullable(),
  job_id: z.string().nullable(),
  requested_runtime: z.string(),
  request_model: z.string(),
  runtime_used: z.string().nullable(),
  response_model: z.string().nullable(),
  provider: z.string().nullable(),
  failover: z.boolean().nullable(),
  effort: z.string().nullable(),
  packets: z.array(z.string()),
  evidence_grade: z.enum(EVIDENCE_GRADES),
  outcome: z.string(),
  failure_edge: z.string().nullable(),
  fault_side: z.enum(FAULT_SIDES).nullable(),
  config_fingerprint_hard: z.string(),
  usage: z
    .object({
      input_tokens: z.number().int().optional(),
      output_tokens: z.number().int().optional(),
      cache_read_input_tokens: z.number().int().optional(),
      cache_creation_input_tokens: z.number().int().optional(),
    })
    .optional(),
  usage_legs: z.number().int().optional(),
  cost_usd: z.number().optional(),
  prev_hash: z.string(),
  hash: z.string(),
  created_at: timestamp,
});

/** `GET /v1/tasks/:id`: the task, its goal loop, and the team's side when the team touched it. */
/** An accepted team goal's packet attachments archive (seed 002): asked for, archived (with what was refused), or failed. */
const taskAttachmentsSchema = z.object({
  status: z.enum(["pending", "archived", "failed"]),
  round: z.number().int(),
  /** Every path the accepted round's packets named, as declared. */
  named: z.array(z.string()),
  requested_at: timestamp,
  job_id: z.string().optional(),
  recorded_at: timestamp.optional(),
  archived: z.array(archivedFile.extend({ download: z.string() })).optional(),
  refused: z.array(refusedFile).optional(),
  error: z.object({ code: z.string(), reason: z.string().optional() }).optional(),
}) satisfies z.ZodType<TaskAttachmentsView>;

export const taskDetailSchema = taskSchema.extend({
  goal_loop: goalLoopSchema,
  team_spec: teamTaskViewSchema.shape.team_spec,
  spec_frozen_at: teamTaskViewSchema.shape.spec_frozen_at,
  gate: teamTaskViewSchema.shape.gate,
  team_refused: teamTaskViewSchema.shape.team_refused,
  rounds: z
    .array(teamRoundStateSchema.extend({ version: z.number().int(), started_at: timestamp, ended_at: timestamp.nullable() }))
    .optional(),
  team_budget: teamTaskViewSchema.shape.budget.unwrap().optional(),
  role_turns: z.array(roleTurnSchema).optional(),
  attachments: taskAttachmentsSchema.optional(),
});

/** `GET /v1/tasks/:id/roles`: every ledger row, and whether the hash chain still verifies. */
export const taskRolesSchema = z.object({
  task_id: z.string(),
  role_turns: z.array(roleTurnSchema),
  chain: z.union([z.object({ ok: z.literal(true) }), z.object({ ok: z.literal(false), broken_at_seq: z.number().int() })]),
}) satisfies z.ZodType<Awaited<ReturnType<typeof roleTurnsView>>>;
