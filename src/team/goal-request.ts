import * as z from "zod";
import type { Db } from "../db/client";
import { TASK_PRIORITIES, type EmployeeRow } from "../db/schema";
import type { Env } from "../env";
import { notFound } from "../lib/errors";
import { readSection } from "../lib/config";
import { label } from "../lib/validation";
import { checkFrozenGoalSize } from "../tasks/frozen-goal";
import { conversationRef, createTask } from "../tasks/create-task";
import { policyAsksForTeam } from "../tasks/dispatch/route";
import { findEmployee } from "../tasks/employees";
import { decideGate } from "./gate";
import { measureGate } from "./gate-measure";
import { openTeamGoal, type GoalEmployee, type MatrixAdvice } from "./goals";
import { continueLoop, type LoopStep } from "./goal-loop";
import { goalsConfig } from "./goals-config";
import { teamSettings } from "./settings";

const count = z.number().int().min(0).max(100_000);

/**
 * `POST /v1/employees/:id/goals` (API.md "Team-as-Agent"). `tags` and `priority` are optional
 * additions: they give the goal task its class, as for `POST /v1/tasks`.
 */
export const goalBody = z
  .strictObject({
    title: label(300),
    acceptance_criteria: z.array(z.string().trim().min(1).max(2_000)).max(50),
    signals: z
      .strictObject({
        independent_items: count.optional(),
        dependency_hubs: count.optional(),
        fits_one_context: z.boolean().optional(),
        produces_artifacts: z.boolean().optional(),
      })
      .optional()
      .describe(
        "Hints only: the gate measures its signals from the goal (title, criteria, named paths). A hint can only keep the goal solo (fewer independent items, more hubs, fits one context, no artifacts); it never makes a signal hold",
      ),
    exclusions: z
      .strictObject({
        live_channel_turn: z.boolean().optional(),
        plan_first_pending: z.boolean().optional(),
        irreversible_in_plan: z.boolean().optional(),
      })
      .optional()
      .describe(
        "Hints only: the gate measures its hard exclusions itself. `true` adds an exclusion (the goal stays solo); `false` never lifts a measured one",
      ),
    /** Rounds the goal loop may spend (default `[goals] iteration_cap`); fewer than 3 keeps the goal solo. */
    rounds_left: z.number().int().min(0).max(50).optional(),
    tags: z.array(label(64)).max(20).default([]),
    priority: z.enum(TASK_PRIORITIES).default("medium"),
    /** The conversation the goal came from: a team round's progress line is posted there (seed 002). */
    conversation_id: conversationRef.optional(),
  })
  .superRefine(checkFrozenGoalSize);
export type GoalBody = z.infer<typeof goalBody>;

/** What the team feature reads of an employee row: its model, its own `[team]`, its sandbox. */
export function goalEmployee(row: EmployeeRow): GoalEmployee {
  const team = teamSettings.safeParse(row.config?.team);
  return {
    id: row.id,
    model: { runtime: row.runtime, preferred: row.modelPreferred, ...(row.modelEffort ? { effort: row.modelEffort } : {}) },
    ...(row.config?.team !== undefined && team.success ? { team: team.data } : {}),
    sandbox_enabled: row.sandboxEnabled === true,
  };
}

/**
 * A goal for an employee: the goal task is created and routed like any task (dispatch guard, D5
 * overrides), then the team side decides on the employee that got it — cascade and validation,
 * gate, spec freeze — and the goal loop starts its first round: the team's when the gate says team
 * (or gray: the planner runs once and the gate is re-run on its real decomposition), else the
 * employee's own run. The answer says what runs.
 */
export async function openGoal(env: Env, db: Db, employeeId: string, body: GoalBody, actor: string, now: Date, advice?: MatrixAdvice) {
  if (!(await findEmployee(db, employeeId))) throw notFound(`employee ${employeeId}`);
  const loop = await readSection(db, goalsConfig);
  const rounds = body.rounds_left ?? loop.iteration_cap;
  const created = await createTask(
    env,
    db,
    {
      title: body.title,
      tags: body.tags,
      priority: body.priority,
      mode: "goal",
      assignee: employeeId,
      acceptance_criteria: body.acceptance_criteria,
      manual: false,
      ...(body.conversation_id ? { conversation_id: body.conversation_id } : {}),
    },
    actor,
    now,
    rounds,
  );
  const worker = await findEmployee(db, created.assigned_to);
  if (!worker) throw notFound(`employee ${created.assigned_to}`);
  const goal = { title: body.title, acceptance_criteria: body.acceptance_criteria };
  const opened = await openTeamGoal(
    db,
    {
      taskId: created.task_id,
      employee: goalEmployee(worker),
      goal,
      ...(body.signals || body.exclusions
        ? { hints: { ...(body.signals ? { signals: body.signals } : {}), ...(body.exclusions ? { exclusions: body.exclusions } : {}) } }
        : {}),
      ...(body.conversation_id ? { conversation_id: body.conversation_id } : {}),
      rounds_left: rounds,
      loop: { max_concurrent: loop.max_concurrent, iteration_cap: loop.iteration_cap },
      ...(advice ? { advice } : {}),
      ...(policyAsksForTeam(created.route.policy, { mode: "goal", manual: false }) ? { dispatch_role_team: true } : {}),
    },
    now,
  );
  const base = { task_id: created.task_id, assigned_to: created.assigned_to, routed_by: created.routed_by };
  const step = await continueLoop(env, created.task_id, now);
  const work = loopAnswer(step);
  if (opened.team === "disabled") {
    // Nothing was recorded for the team; the gate is shown as what it is: not consulted (its signals
    // as measured from the goal, the caller's hints leaning solo as they would have).
    const hints = { ...(body.signals ? { signals: body.signals } : {}) };
    const signals = decideGate({
      mode: "always_solo",
      sandbox_enabled: false,
      signals: measureGate(goal, hints).signals,
      exclusions: {},
      acceptance_criteria_count: goal.acceptance_criteria.length,
    }).signals;
    return { ...base, gate: { decision: "solo" as const, reason: "team_disabled", signals }, ...work };
  }
  if (opened.team === "refused") {
    return {
      ...base,
      gate: opened.gate,
      // An install that never configured [team] refuses quietly: nothing about a team anywhere.
      ...(opened.audited
        ? { team_refused: { reason: opened.team_refused.reason, role: opened.team_refused.role, detail: opened.team_refused.detail } }
        : {}),
      ...work,
    };
  }
  return {
    ...base,
    gate: opened.gate,
    team_spec: opened.team_spec,
    ...(opened.reports.length ? { reports: opened.reports } : {}),
    ...work,
  };
}

/** What a create answer says of the loop's first step: the round it started, or why it waits. */
export function loopAnswer(step: LoopStep) {
  switch (step.kind) {
    case "started":
    case "working":
      return {
        round: { round_id: step.round.round_id, round: step.round.round_no, mode: step.round.mode, phase: step.round.phase },
        goal_loop: { state: "working" as const },
      };
    case "waiting":
      return { goal_loop: { state: "waiting" as const, reason: step.reason } };
    case "settled":
      return { goal_loop: { state: "ended" as const, status: step.status, reason: step.reason } };
    case "idle":
      return step.reason === "manual" ? {} : { goal_loop: { state: "ended" as const, reason: step.reason } };
  }
}
