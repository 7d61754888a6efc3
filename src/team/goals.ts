import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { conversations } from "../db/schema";
import { readSection } from "../lib/config";
import { cascadeTeamConfig, type CascadeReport, type EmployeeModel, type RolePrior } from "./cascade";
import { checkTeamCapacity } from "./capacity";
import { teamConfig } from "./config";
import { readTeamLimits } from "./limits";
import { decideGate, type CapabilityGap, type GateDecision } from "./gate";
import { measureGate, type GateHints, type GoalConversation } from "./gate-measure";
import type { TeamSettings } from "./settings";
import { freezeTeamSpec, recordTeamRefusal, type FrozenGoal } from "./spec-store";
import { refusalVisibility, validateTeamSpec, type SpecProblem, type TeamSpec } from "./validate";

/** What the goal path knows about the employee (the tasks feature supplies it at integration). */
export interface GoalEmployee {
  id: string;
  model: EmployeeModel;
  /** The employee's own `[team]` override (its `team` field), if any. */
  team?: TeamSettings;
  sandbox_enabled?: boolean;
}

export interface OpenTeamGoalInput {
  taskId: string;
  employee: GoalEmployee;
  goal: FrozenGoal;
  /**
   * What the caller claimed about the goal (the request's `signals` and `exclusions`): hints that can
   * only keep it solo. The gate's inputs are measured from the goal itself (gate-measure.ts).
   */
  hints?: GateHints;
  /** The conversation the goal was raised in: a live turn whose reply is in flight keeps the goal solo. */
  conversation_id?: string;
  rounds_left?: number;
  capability_gap?: CapabilityGap;
  /** The loop's limits, for the capacity check at spec validation. */
  loop?: { max_concurrent: number; iteration_cap: number };
  /** What the capability matrix advises (the composition root reads it): absent, the team is chosen without it. */
  advice?: MatrixAdvice;
  /** The task was routed under `[dispatch] policy = "role_team"` (the gate answers team; guards still hold). */
  dispatch_role_team?: boolean;
}

/**
 * The capability matrix as the team side reads it (seed 002): a prior for roles whose model no level
 * sets, and the gate's capability-gap signal for the executor's current model.
 */
export interface MatrixAdvice {
  prior: RolePrior;
  gap(role: "executor", runtime: string, model: string): CapabilityGap | null;
}

/** What runs when the spec was refused: solo, with why (a refusal token, or `team_not_configured`). */
export type RefusedGate = Omit<GateDecision, "decision" | "reason"> & { decision: "solo"; reason: string };

export type OpenTeamGoalResult =
  /** `[team]` is off for this employee: nothing was recorded, byte-identical to no team feature. */
  | { team: "disabled" }
  | {
      team: "refused";
      gate: RefusedGate;
      team_refused: { reason: string; role: string; detail: string; problems: SpecProblem[] };
      /** Quiet refusals (an install that never configured [team]) leave no row and no event. */
      audited: boolean;
      reports: CascadeReport[];
    }
  | { team: "frozen"; gate: GateDecision; team_spec: TeamSpec; reports: CascadeReport[] };

/**
 * The team half of creating a goal task (`POST /v1/employees/:id/goals`): cascade and validate
 * `[team]`, decide the gate, and freeze the spec once on the task. A spec that fails validation never
 * forms a team: the task runs solo, and the refusal is audited unless the install never configured
 * `[team]` (the quiet-refusal rule).
 */
export async function openTeamGoal(db: Db, input: OpenTeamGoalInput, now: Date): Promise<OpenTeamGoalResult> {
  const global = await readSection(db, teamConfig);
  const eff = cascadeTeamConfig(global, input.employee.team, input.employee.model, input.advice?.prior);
  if (!eff.enabled) return { team: "disabled" };
  const executor = eff.roles.executor;
  const measuredGap =
    input.capability_gap ??
    (input.advice && executor.runtime ? (input.advice.gap("executor", executor.runtime, executor.model) ?? undefined) : undefined);

  // The gate reads what was measured, never what the caller claims (issue 39); the caller's hints
  // may only lean solo.
  const measured = measureGate(
    {
      title: input.goal.title,
      acceptance_criteria: input.goal.acceptance_criteria,
      conversation: input.conversation_id ? await goalConversation(db, input.conversation_id) : null,
      ...(input.rounds_left !== undefined ? { rounds_left: input.rounds_left } : {}),
    },
    input.hints,
  );
  const gateInput = {
    mode: eff.gate,
    sandbox_enabled: input.employee.sandbox_enabled === true,
    signals: measured.signals,
    exclusions: measured.exclusions,
    acceptance_criteria_count: input.goal.acceptance_criteria.length,
    ...(measured.rounds_left !== undefined ? { rounds_left: measured.rounds_left } : {}),
    ...(measuredGap ? { capability_gap: measuredGap } : {}),
    ...(input.dispatch_role_team ? { dispatch_role_team: true } : {}),
  };
  const gate: GateDecision = { ...decideGate(gateInput), measured: measured.record };

  const validation = validateTeamSpec(eff);
  if (!validation.ok) {
    const team_refused = { reason: validation.reason, role: validation.role, detail: validation.detail, problems: validation.problems };
    // What runs is solo: the answer says so, with why (the gate's own reason when it chose solo anyway).
    const quiet = refusalVisibility(eff) === "quiet";
    const solo: RefusedGate = {
      decision: "solo",
      reason: gate.decision === "solo" ? gate.reason : quiet ? "team_not_configured" : validation.reason,
      signals: gate.signals,
      measured: measured.record,
    };
    if (quiet) {
      console.debug(`team: ${input.taskId} stays solo (${validation.reason}); [team] was never configured, so no audit row`);
      return { team: "refused", gate: solo, team_refused, audited: false, reports: eff.reports };
    }
    await db.batch(
      recordTeamRefusal(
        db,
        {
          taskId: input.taskId,
          employeeId: input.employee.id,
          refusal: { ...team_refused, reports: eff.reports, gate },
          gate: solo,
          goal: input.goal,
        },
        now,
      ),
    );
    return { team: "refused", gate: solo, team_refused, audited: true, reports: eff.reports };
  }

  const limits = await readTeamLimits(db);
  const short = input.loop ? checkTeamCapacity({ ...input.loop, ephemeral_max_active: limits.ephemeral_max_active }) : null;
  const reports: CascadeReport[] = short ? [...eff.reports, short] : eff.reports;
  const frozen = await freezeTeamSpec(
    db,
    {
      taskId: input.taskId,
      employeeId: input.employee.id,
      spec: validation.spec,
      gate,
      goal: input.goal,
      ...(short ? { warnings: [{ ...short }] } : {}),
    },
    now,
  );
  return { team: "frozen", gate: frozen.gate, team_spec: frozen.spec, reports };
}

/** The conversation a goal names, as the gate's live-turn exclusion reads it (null: none stored). */
async function goalConversation(db: Db, id: string): Promise<GoalConversation | null> {
  const row = await db
    .select({ source: conversations.source, status: conversations.status, pending: conversations.pendingJobId })
    .from(conversations)
    .where(eq(conversations.id, id))
    .get();
  return row ? { source: row.source, status: row.status, reply_pending: row.pending !== null } : null;
}
