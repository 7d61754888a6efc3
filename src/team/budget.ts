import type { TeamRole } from "./settings";
import { MEMBER_STAGE_KINDS, type MemberStageKind } from "../jobs/team-vocabulary";
import { budgetLimitsInput, DEGRADE_STEPS, type BudgetLimitsInput, type DegradeStep } from "../tasks/dispatch/team-fields";

/** Stages a role member runs (a `team_stage` job, charged to the task's spawn budget). */
export { MEMBER_STAGE_KINDS, type MemberStageKind } from "../jobs/team-vocabulary";
export { budgetLimitsInput, type BudgetLimitsInput, type DegradeStep } from "../tasks/dispatch/team-fields";

/**
 * The per-task spawn budget (seed 002 "予算が足りなくなったとき"), as pure arithmetic shared by the
 * plan and the charge: a round costs planner? + executors + verifier + repair?, the verifier counts
 * (the seed's bug was a plan that left it out while the charge counted it), the utility role is
 * spawn-free. `TaskBudget` (a Durable Object) applies it under contention.
 */
/**
 * Every stage of a round: the members' stages, the employee's own run (`work`, a solo round) and
 * the acceptance path's evaluator (`evaluate`). The last two are not member spawns.
 */
export const STAGE_KINDS = [...MEMBER_STAGE_KINDS, "work", "evaluate"] as const;
export type StageKind = (typeof STAGE_KINDS)[number];

export const STAGE_ROLE: Readonly<Record<MemberStageKind, TeamRole>> = {
  plan: "planner",
  execute: "executor",
  // Seed 002's 合成 (synthesis): the utility role merges the executors' output for the acceptance path.
  synthesize: "utility",
  verify: "verifier",
  repair: "executor",
};

export function isMemberStage(kind: StageKind): kind is MemberStageKind {
  return (MEMBER_STAGE_KINDS as readonly string[]).includes(kind);
}

/** Spawns one stage costs. One table for plan and charge, so the two can never disagree. */
export function stageCost(kind: MemberStageKind | "utility"): number {
  return kind === "utility" || kind === "synthesize" ? 0 : 1;
}

export const MIN_SPAWNS_PER_TASK = 3;

export interface BudgetLimits {
  max_spawns_per_task: number;
  max_turns_per_role: number;
  degrade_order: DegradeStep[];
}

/**
 * Clamps `max_spawns_per_task` to ≥ 3 (planner + executor + verifier) and drops unknown
 * `degrade_order` entries with a warning; a list with no usable entry keeps the default chain
 * (escalating to a human on every overrun is harsher than a typo asked for).
 */
export function normalizeBudgetLimits(raw: BudgetLimitsInput): { limits: BudgetLimits; warnings: string[] } {
  const input = budgetLimitsInput.parse(raw);
  const warnings: string[] = [];
  const max = Math.max(MIN_SPAWNS_PER_TASK, input.max_spawns_per_task);
  if (max !== input.max_spawns_per_task) warnings.push(`max_spawns_per_task ${input.max_spawns_per_task} clamped to ${max}`);
  const known = input.degrade_order.filter((s): s is DegradeStep => (DEGRADE_STEPS as readonly string[]).includes(s));
  for (const s of input.degrade_order)
    if (!(DEGRADE_STEPS as readonly string[]).includes(s)) warnings.push(`unknown degrade_order entry '${s}' dropped`);
  const order = [...new Set(known)];
  if (order.length === 0) warnings.push("degrade_order has no usable entry; the default chain is kept");
  return {
    limits: {
      max_spawns_per_task: max,
      max_turns_per_role: input.max_turns_per_role,
      degrade_order: order.length ? order : [...DEGRADE_STEPS],
    },
    warnings,
  };
}

/** What a round would like; the verifier is always part of a round. */
export interface RoundWant {
  planner: boolean;
  executors: number;
  repair: boolean;
  utility: boolean;
}

export interface RoundPlan extends RoundWant {
  verifier: true;
}

export function roundCost(plan: RoundWant): number {
  return (
    (plan.planner ? stageCost("plan") : 0) +
    plan.executors * stageCost("execute") +
    stageCost("verify") +
    (plan.repair ? stageCost("repair") : 0) +
    (plan.utility ? stageCost("utility") : 0)
  );
}

/** Turns a role has already used in this task (a role's turn is its part in one round). */
export type RoleTurns = Partial<Record<TeamRole, number>>;

export type PlanOutcome =
  | { ok: true; plan: RoundPlan; cost: number; steps: DegradeStep[] }
  | { ok: false; reason: "budget_exhausted"; detail: string; steps: DegradeStep[] };

function applyStep(want: RoundWant, step: DegradeStep): RoundWant {
  switch (step) {
    case "utility":
      return { ...want, utility: false };
    case "verifier_second_pass":
      return { ...want, repair: false };
    case "executor_replica":
      return { ...want, executors: Math.min(1, want.executors) };
  }
}

/**
 * Plans a round against what is left: while it costs more than the remaining spawns, capabilities
 * are given up in `degrade_order` (each step taken is recorded, so a cheap round reads as cheap and
 * not as a worse team); when nothing is left to give up, the answer is `budget_exhausted`. A role
 * with no turns left also exhausts the budget: a round cannot run without it.
 */
export function planRound(limits: BudgetLimits, remaining: number, turnsUsed: RoleTurns, want: RoundWant): PlanOutcome {
  for (const role of ["planner", "executor", "verifier"] as const) {
    const needed = role === "planner" ? want.planner : true;
    if (needed && (turnsUsed[role] ?? 0) >= limits.max_turns_per_role) {
      return {
        ok: false,
        reason: "budget_exhausted",
        detail: `the ${role} has used all ${limits.max_turns_per_role} of its turns`,
        steps: [],
      };
    }
  }
  let current: RoundWant = { ...want, executors: Math.max(1, want.executors) };
  const steps: DegradeStep[] = [];
  for (const step of limits.degrade_order) {
    if (roundCost(current) <= remaining) break;
    current = applyStep(current, step);
    steps.push(step);
  }
  const cost = roundCost(current);
  if (cost > remaining) {
    return { ok: false, reason: "budget_exhausted", detail: `a round needs at least ${cost} spawns and ${remaining} are left`, steps };
  }
  return { ok: true, plan: { ...current, verifier: true }, cost, steps };
}

/** The stage kinds a plan implies, in the order they run (what gets charged). */
export function plannedStages(plan: RoundPlan): MemberStageKind[] {
  return [
    ...(plan.planner ? (["plan"] as const) : []),
    ...Array.from({ length: plan.executors }, () => "execute" as const),
    ...(plan.utility ? (["synthesize"] as const) : []),
    "verify",
    ...(plan.repair ? (["repair"] as const) : []),
  ];
}
