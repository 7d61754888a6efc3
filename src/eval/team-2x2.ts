import { intervalStats, type IntervalStats } from "./cells";
import type { MatrixDesign } from "./design";

/**
 * The team 2×2 (seed 002, `--team-2x2`): per case, four real team rounds, planner weak/strong ×
 * executor weak/strong, each scored by a fixed independent verifier (PASS 1, FAIL 0, no verdict: not
 * scored). Only rows where all four arms are scored count. The outcome is split between the two roles
 * by their Shapley values,
 *   φ_planner  = ½[(v_SW − v_WW) + (v_SS − v_WS)],  φ_executor = ½[(v_WS − v_WW) + (v_SS − v_SW)]
 * (v_PE: planner P, executor E), which sum to v_SS − v_WW. Their difference per row is v_SW − v_WS,
 * so "invest in the planner first" is resolved only when that paired difference's interval lies wholly
 * above zero (executor: below), clustered by domain like every other interval here.
 */
export type Strength = "weak" | "strong";

export interface TeamArmRun {
  domain: string;
  case_id: string;
  planner: Strength;
  executor: Strength;
  /** The independent verifier's verdict on the round; `unscored` when none was obtained. */
  verdict: "PASS" | "FAIL" | "unscored";
}

type Arm = "weak_weak" | "strong_weak" | "weak_strong" | "strong_strong";
const ARMS: readonly Arm[] = ["weak_weak", "strong_weak", "weak_strong", "strong_strong"];

export interface Team2x2Report {
  /** Rows (cases) with all four arms scored: the only rows that count. */
  complete_rows: number;
  incomplete_rows: number;
  /** Mean score per arm over complete rows, keyed `<planner>_<executor>`. Absent with no complete row. */
  arms?: Record<Arm, number>;
  planner_shapley?: number;
  executor_shapley?: number;
  /** φ_planner − φ_executor per row, with its interval. */
  difference: IntervalStats;
  invest_first: "planner" | "executor" | "unresolved";
  reason: "difference_above_zero" | "difference_below_zero" | "difference_spans_zero" | "degenerate_interval" | "no_complete_rows";
}

export function team2x2(runs: readonly TeamArmRun[], design: MatrixDesign): Team2x2Report {
  const rows = new Map<string, { domain: string; arms: Map<Arm, number[]> }>();
  for (const run of runs) {
    const key = `${run.domain}\u0000${run.case_id}`;
    const row = rows.get(key) ?? { domain: run.domain, arms: new Map() };
    rows.set(key, row);
    if (run.verdict === "unscored") continue;
    const arm: Arm = `${run.planner}_${run.executor}`;
    row.arms.set(arm, [...(row.arms.get(arm) ?? []), run.verdict === "PASS" ? 1 : 0]);
  }
  const complete = [...rows.values()].flatMap((row) => {
    if (!ARMS.every((a) => (row.arms.get(a)?.length ?? 0) > 0)) return [];
    const v = Object.fromEntries(ARMS.map((a) => [a, mean(row.arms.get(a)!)])) as Record<Arm, number>;
    return [{ domain: row.domain, v }];
  });
  const difference = intervalStats(
    complete.map((r) => ({ value: r.v.strong_weak - r.v.weak_strong, cluster: r.domain })),
    design,
    -1,
    1,
  );
  const base = { complete_rows: complete.length, incomplete_rows: rows.size - complete.length, difference };
  if (complete.length === 0) return { ...base, invest_first: "unresolved", reason: "no_complete_rows" };

  const arms = Object.fromEntries(ARMS.map((a) => [a, mean(complete.map((r) => r.v[a]))])) as Record<Arm, number>;
  const shapley = {
    arms,
    planner_shapley: (arms.strong_weak - arms.weak_weak + (arms.strong_strong - arms.weak_strong)) / 2,
    executor_shapley: (arms.weak_strong - arms.weak_weak + (arms.strong_strong - arms.strong_weak)) / 2,
  };
  const { ci_low, ci_high } = difference;
  if (difference.degenerate_interval || ci_low === undefined || ci_high === undefined) {
    return { ...base, ...shapley, invest_first: "unresolved", reason: "degenerate_interval" };
  }
  if (ci_low > 0) return { ...base, ...shapley, invest_first: "planner", reason: "difference_above_zero" };
  if (ci_high < 0) return { ...base, ...shapley, invest_first: "executor", reason: "difference_below_zero" };
  return { ...base, ...shapley, invest_first: "unresolved", reason: "difference_spans_zero" };
}

function mean(xs: readonly number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}
