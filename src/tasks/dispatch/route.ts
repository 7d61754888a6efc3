import type { RoutedBy, TaskRoute } from "../../db/schema";
import type { DispatchPolicy } from "./config";

/** Where a new task goes, how that was decided, and the record of it kept on the task. */
export interface Route {
  assignedTo: string;
  routedBy: RoutedBy;
  route: TaskRoute;
}

/** Fallback reasons recorded on a task when its policy could not route it and the hierarchy did. */
export const FALLBACKS = [
  "roster_empty",
  "llm_select_timeout",
  "llm_select_unparseable",
  "llm_select_failed",
  "llm_select_unavailable",
] as const;
export type Fallback = (typeof FALLBACKS)[number];

/** Round robin: the roster member at the class's counter, wrapping around. */
export function roundRobinPick(roster: readonly string[], counter: number): string {
  if (roster.length === 0) throw new Error("roundRobinPick: empty roster");
  return roster[((counter % roster.length) + roster.length) % roster.length]!;
}

/**
 * FixedHierarchy: the task goes to the employee it is addressed to, unless a D5 override in force
 * for (task_class, assignee) moves it to a sibling. The caller looks the override up only when
 * topology evolution is enabled and the override may apply (seed 000: with round_robin/llm_select
 * only once the roster is empty), so with D5 off this is exactly the plain hierarchy.
 */
export function hierarchyRoute(
  policy: DispatchPolicy,
  assignee: string,
  override: { id: string; toAgent: string } | null,
  extra: { fallback?: Fallback; roster?: string[]; job_id?: string } = {},
): Route {
  const base: TaskRoute = { policy, ...extra };
  if (override) return { assignedTo: override.toAgent, routedBy: "override", route: { ...base, override_id: override.id } };
  return { assignedTo: assignee, routedBy: "hierarchy", route: base };
}

/** Whether a D5 override may apply: always under the hierarchy's policies, otherwise only for an empty roster. */
export function overrideMayApply(policy: DispatchPolicy, rosterSize: number): boolean {
  return !usesRoster(policy) || rosterSize === 0;
}

/** round_robin and llm_select pick among a class's roster; fixed_hierarchy and role_team route by the hierarchy. */
export function usesRoster(policy: DispatchPolicy): boolean {
  return policy === "round_robin" || policy === "llm_select";
}

/**
 * role_team (seed 002): a goal task the loop works (not manual, not plain) is offered to its
 * employee's team of roles, the gate answering "team" in place of the signals. The team's own
 * conditions still hold (src/team/goals.ts): `[team] enabled = false` and `gate = "always_solo"`,
 * the sandbox rule, the hard exclusions, spec validation (rules 1–3) and the budget of the first
 * round each still keep the task solo. Every other policy leaves a task created here solo.
 */
export function policyAsksForTeam(policy: DispatchPolicy, task: { mode: "goal" | "plain"; manual: boolean }): boolean {
  return policy === "role_team" && task.mode === "goal" && !task.manual;
}
