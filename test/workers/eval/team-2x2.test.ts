import { describe, expect, it } from "vitest";
import { team2x2, type Strength, type TeamArmRun } from "../../../src/eval/team-2x2";
import { design } from "./helpers";

const Z = 1.959963984540054;

/** One row: the four arms' verdicts in the order WW, SW, WS, SS (planner_executor). */
function row(domain: string, case_id: string, [ww, sw, ws, ss]: TeamArmRun["verdict"][]): TeamArmRun[] {
  const arm = (planner: Strength, executor: Strength, verdict: TeamArmRun["verdict"]): TeamArmRun => ({
    domain,
    case_id,
    planner,
    executor,
    verdict,
  });
  return [arm("weak", "weak", ww!), arm("strong", "weak", sw!), arm("weak", "strong", ws!), arm("strong", "strong", ss!)];
}
const P = "PASS" as const;
const F = "FAIL" as const;

describe("team2x2", () => {
  // Complete rows (WW, SW, WS, SS): r1 A 0 0 1 1, r2 A 0 1 1 1, r3 B 0 0 1 1, r4 B 1 1 1 1, r5 B 0 0 0 1;
  // r6 misses its SS verdict and does not count. Arm means WW 0.2, SW 0.4, WS 0.8, SS 1.
  // φ_planner = ½[(0.4 − 0.2) + (1 − 0.8)] = 0.2; φ_executor = ½[(0.8 − 0.2) + (1 − 0.4)] = 0.6.
  // Per-row φ_P − φ_E = SW − WS: −1, 0 | −1, 0, 0 → −0.4; residual sums A −0.2, B 0.2;
  // V = 2 · 0.08 / 25 → SE 0.08; CI = −0.4 ± 0.156797, wholly below zero → invest in the executor first.
  const runs = [
    ...row("a", "r1", [F, F, P, P]),
    ...row("a", "r2", [F, P, P, P]),
    ...row("b", "r3", [F, F, P, P]),
    ...row("b", "r4", [P, P, P, P]),
    ...row("b", "r5", [F, F, F, P]),
    ...row("a", "r6", [P, P, P, "unscored"]),
  ];

  it("splits the hand-computed table by Shapley value over complete rows only", () => {
    const r = team2x2(runs, design());
    expect(r).toMatchObject({ complete_rows: 5, incomplete_rows: 1, invest_first: "executor", reason: "difference_below_zero" });
    expect(r.arms!.weak_weak).toBeCloseTo(0.2, 12);
    expect(r.arms!.strong_weak).toBeCloseTo(0.4, 12);
    expect(r.arms!.weak_strong).toBeCloseTo(0.8, 12);
    expect(r.arms!.strong_strong).toBe(1);
    expect(r.planner_shapley).toBeCloseTo(0.2, 12);
    expect(r.executor_shapley).toBeCloseTo(0.6, 12);
    expect(r.planner_shapley! + r.executor_shapley!).toBeCloseTo(r.arms!.strong_strong - r.arms!.weak_weak, 12);
    expect(r.difference.mean).toBeCloseTo(-0.4, 12);
    expect(r.difference.se_used).toBeCloseTo(0.08, 12);
    expect(r.difference.ci_high).toBeCloseTo(-0.4 + Z * 0.08, 12);
  });

  it("names the planner when the difference is wholly above zero", () => {
    const swapped = runs.map((x) => ({ ...x, planner: x.executor, executor: x.planner }));
    expect(team2x2(swapped, design())).toMatchObject({ invest_first: "planner", reason: "difference_above_zero" });
  });

  it("is unresolved when the difference spans zero", () => {
    // SW − WS: A 1, 0; B −1, 0 → 0 with residual sums 1, −1 → SE 0.5, CI ±0.98.
    const mixed = [
      ...row("a", "r1", [F, P, F, P]),
      ...row("a", "r2", [F, F, F, P]),
      ...row("b", "r3", [F, F, P, P]),
      ...row("b", "r4", [P, P, P, P]),
    ];
    expect(team2x2(mixed, design())).toMatchObject({ invest_first: "unresolved", reason: "difference_spans_zero" });
  });

  it("is unresolved with a degenerate interval (one row)", () => {
    expect(team2x2(row("a", "r1", [F, F, P, P]), design())).toMatchObject({
      complete_rows: 1,
      invest_first: "unresolved",
      reason: "degenerate_interval",
    });
  });

  it("counts nothing without a complete row and makes up no arm means", () => {
    const r = team2x2([...row("a", "r1", [P, P, "unscored", P])], design());
    expect(r).toMatchObject({ complete_rows: 0, incomplete_rows: 1, invest_first: "unresolved", reason: "no_complete_rows" });
    expect(r).not.toHaveProperty("arms");
    expect(r).not.toHaveProperty("planner_shapley");
  });
});
