import { describe, expect, it } from "vitest";
import { decideGate } from "../../../src/team/gate";
import { validateMatrix, type MatrixCell, type RoleModelMatrix } from "../../../src/eval/matrix";
import { capabilityGap, explainCapabilityGap, matrixPrior } from "../../../src/eval/prior";

const HEADER = {
  declared_mde: 0.1,
  alpha: 0.05,
  power: 0.8,
  k: 3,
  cluster_key: "domain",
  planner: "deferred",
  pass_line: 0.5,
  generated_at: "2026-12-01T09:00:00.000Z",
} as const;

type CellSpec = Pick<MatrixCell, "model" | "mean"> & Partial<MatrixCell>;

/** A consistent cell: resolved ones get a ±0.05 interval and an MDE that resolves 0.10. */
function cell(spec: CellSpec): MatrixCell {
  const resolved = spec.verdict !== "unresolved";
  const base = {
    domain: "config-edits",
    role: "executor",
    runtime: "claude",
    n: 40,
    ci_low: Math.max(0, spec.mean - 0.05),
    ci_high: Math.min(1, spec.mean + 0.05),
  } as const;
  const verdict = resolved
    ? spec.mean - 0.05 > 0.5
      ? ({ verdict: "pass", verdict_reason: "above_pass_line" } as const)
      : ({ verdict: "fail", verdict_reason: "below_pass_line" } as const)
    : ({ verdict: "unresolved", verdict_reason: "mde_not_resolved" } as const);
  return { ...base, achieved_mde: resolved ? 0.07 : 0.3, ...verdict, ...spec };
}

/** Builds a matrix and checks it passes the reader, so every fixture is one a real file could hold. */
function matrix(...specs: CellSpec[]): RoleModelMatrix {
  const cells = specs.map(cell);
  const checked = validateMatrix({ header: HEADER, cell: cells });
  if (!checked.ok) throw new Error(`fixture refused: ${checked.reason} at ${checked.path}: ${checked.detail}`);
  return checked.matrix;
}

describe("matrixPrior", () => {
  it("picks the best resolved cell on the role's own runtime", () => {
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.85 }, { model: "claude-haiku-4-5", mean: 0.7 });
    expect(matrixPrior(m, "executor", "claude", "claude")).toMatchObject({
      ok: true,
      reason: "matrix_winner",
      runtime: "claude",
      model: "claude-sonnet-4-6",
      n: 40,
      mean: 0.85,
      runner_up: { model: "claude-haiku-4-5" },
    });
  });

  it("has no winner for a role or runtime with no cells", () => {
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.85 });
    expect(matrixPrior(m, "verifier", "claude", "claude")).toEqual({ ok: false, reason: "no_cells" });
    expect(matrixPrior(m, "executor", "codex", "openai")).toEqual({ ok: false, reason: "no_cells" });
  });

  it("ignores unresolved cells entirely, however high they score", () => {
    const m = matrix({ model: "claude-opus-4-5", mean: 0.95, verdict: "unresolved" }, { model: "claude-haiku-4-5", mean: 0.7 });
    expect(matrixPrior(m, "executor", "claude", "claude")).toMatchObject({ ok: true, model: "claude-haiku-4-5" });
    expect(matrixPrior(matrix({ model: "claude-opus-4-5", mean: 0.95, verdict: "unresolved" }), "executor", "claude", "claude")).toEqual({
      ok: false,
      reason: "all_unresolved",
    });
  });

  it("counts only cells on the role's own runtime", () => {
    const m = matrix({ model: "gpt-5.6-sol", runtime: "codex", mean: 0.95 }, { model: "claude-haiku-4-5", mean: 0.7 });
    expect(matrixPrior(m, "executor", "claude", "claude")).toMatchObject({ ok: true, model: "claude-haiku-4-5" });
  });

  it("keeps the role's model family: an unknown or other family is no candidate", () => {
    const m = matrix({ model: "opus-next", mean: 0.95 }, { model: "claude-haiku-4-5", mean: 0.7 });
    expect(matrixPrior(m, "executor", "claude", "claude")).toMatchObject({ ok: true, model: "claude-haiku-4-5" });
    expect(matrixPrior(m, "executor", "claude", "openai")).toEqual({ ok: false, reason: "no_cell_in_family" });
  });

  it("calls a lead below the declared MDE a tie, and a tie is no winner", () => {
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.78 }, { model: "claude-haiku-4-5", mean: 0.7 });
    expect(matrixPrior(m, "executor", "claude", "claude")).toMatchObject({
      ok: false,
      reason: "tie_within_mde",
      leader: { model: "claude-sonnet-4-6" },
      runner_up: { model: "claude-haiku-4-5" },
    });
    const exact = matrix({ model: "claude-sonnet-4-6", mean: 0.75 }, { model: "claude-haiku-4-5", mean: 0.75 });
    expect(matrixPrior(exact, "executor", "claude", "claude")).toMatchObject({ ok: false, reason: "tie_within_mde" });
  });

  // Haiku: 10 cases at 0.90 in config-edits, 30 at 0.20 in log-triage → (9 + 6) / 40 = 0.375.
  // Sonnet: 20 cases at 0.75 in config-edits. Haiku holds the best single cell, Sonnet wins pooled.
  it("pools one model's cells across domains n-weighted", () => {
    const m = matrix(
      { model: "claude-haiku-4-5", mean: 0.9, n: 10 },
      { model: "claude-haiku-4-5", mean: 0.2, n: 30, domain: "log-triage" },
      { model: "claude-sonnet-4-6", mean: 0.75, n: 20 },
    );
    const prior = matrixPrior(m, "executor", "claude", "claude");
    expect(prior).toMatchObject({
      ok: true,
      model: "claude-sonnet-4-6",
      n: 20,
      runner_up: { model: "claude-haiku-4-5", n: 40, domains: ["config-edits", "log-triage"] },
    });
    if (prior.ok) expect(prior.runner_up!.mean).toBeCloseTo(0.375, 12);
  });

  it("pools only resolved cells: an unresolved domain does not drag the mean", () => {
    const m = matrix(
      { model: "claude-haiku-4-5", mean: 0.9, n: 10 },
      { model: "claude-haiku-4-5", mean: 0.1, n: 30, domain: "log-triage", verdict: "unresolved" },
      { model: "claude-sonnet-4-6", mean: 0.75, n: 20 },
    );
    expect(matrixPrior(m, "executor", "claude", "claude")).toMatchObject({ ok: true, model: "claude-haiku-4-5", n: 10, mean: 0.9 });
  });
});

describe("capabilityGap", () => {
  const resolvedPair = matrix({ model: "claude-sonnet-4-6", mean: 0.85 }, { model: "claude-haiku-4-5", mean: 0.7 });

  it("gives the n-weighted distance in pp with the header's MDE when both cells are resolved and it reaches the MDE", () => {
    const gap = capabilityGap(resolvedPair, "executor", "claude", "claude-haiku-4-5")!;
    expect(gap.gap_pp).toBeCloseTo(15, 9);
    expect(gap.mde_pp).toBeCloseTo(10, 12);
    // The gate reads it as a held signal.
    const gate = decideGate({
      mode: "auto",
      sandbox_enabled: false,
      signals: {},
      exclusions: {},
      acceptance_criteria_count: 0,
      capability_gap: gap,
    });
    expect(gate.signals.capability_gap).toEqual({ holds: true, unmeasured: false });
  });

  it("holds at exactly the MDE", () => {
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.875 }, { model: "claude-haiku-4-5", mean: 0.625 });
    const edge = { ...m, header: { ...m.header, declared_mde: 0.25 } };
    expect(capabilityGap(edge, "executor", "claude", "claude-haiku-4-5")).toEqual({ gap_pp: 25, mde_pp: 25 });
  });

  it("is null below the MDE (the winner then ties, so there is no winner either)", () => {
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.78 }, { model: "claude-haiku-4-5", mean: 0.7 });
    expect(explainCapabilityGap(m, "executor", "claude", "claude-haiku-4-5")).toMatchObject({ reason: "no_winner" });
    expect(capabilityGap(m, "executor", "claude", "claude-haiku-4-5")).toBeNull();
  });

  it("is null below the MDE against a current model outside the candidate family", () => {
    // "opus-next" has no known family, so it cannot win, but it is the model the role runs now.
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.9 }, { model: "opus-next", mean: 0.85 });
    expect(explainCapabilityGap(m, "executor", "claude", "opus-next")).toMatchObject({ reason: "gap_below_mde" });
    expect(capabilityGap(m, "executor", "claude", "opus-next")).toBeNull();
  });

  it("is null when the current model's cell is unresolved or missing", () => {
    const m = matrix({ model: "claude-sonnet-4-6", mean: 0.85 }, { model: "claude-haiku-4-5", mean: 0.6, verdict: "unresolved" });
    expect(explainCapabilityGap(m, "executor", "claude", "claude-haiku-4-5")).toMatchObject({ reason: "current_model_not_resolved" });
    expect(capabilityGap(resolvedPair, "executor", "claude", "claude-opus-4-5")).toBeNull();
  });

  it("is null when the current model is the winner", () => {
    expect(explainCapabilityGap(resolvedPair, "executor", "claude", "claude-sonnet-4-6")).toMatchObject({
      reason: "current_model_is_winner",
    });
  });

  it("is null when there is no resolved winner", () => {
    const m = matrix(
      { model: "claude-sonnet-4-6", mean: 0.85, verdict: "unresolved" },
      { model: "claude-haiku-4-5", mean: 0.6, verdict: "unresolved" },
    );
    expect(capabilityGap(m, "executor", "claude", "claude-haiku-4-5")).toBeNull();
  });

  it("is null on a runtime with no model family (offline)", () => {
    expect(explainCapabilityGap(resolvedPair, "executor", "offline", "offline")).toEqual({ reason: "runtime_has_no_family" });
  });
});
