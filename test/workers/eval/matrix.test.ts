import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { buildMatrix, MatrixRefusedError, parseMatrix, serializeMatrix } from "../../../src/eval/matrix";
import { buildMatrixReport, type MatrixReport } from "../../../src/eval/report";
import { design, executorRuns, HAIKU, SONNET, verifierRun } from "./helpers";

const NOW = "2026-12-01T09:00:00.000Z";
const CODEX = { runtime: "codex", model: "gpt-5.6-sol" } as const;

function sampleReport(): MatrixReport {
  return buildMatrixReport({
    design: design({ declared_mde: 0.3, k: 1 }),
    generated_at: NOW,
    runs: [
      // Resolved pass: 9 of 10.
      ...executorRuns("config-edits", [...Array(9).fill("PASS"), "FAIL"], SONNET),
      // Unresolved (MDE not resolved): 2 of 3.
      ...executorRuns("config-edits", ["PASS", "PASS", "FAIL"], HAIKU),
      // n = 1: a cell with no interval.
      ...executorRuns("log-triage", ["FAIL"], CODEX),
      // Zero usable observations: a report row, no matrix cell.
      ...executorRuns("log-triage", ["unscored", "unscored"], HAIKU),
      verifierRun("config-edits", "c1", "PASS", "PASS"),
      verifierRun("config-edits", "c2", "FAIL", "PASS"),
      verifierRun("config-edits", "c3", "FAIL", "unparseable"),
    ],
    compare: { weak: HAIKU, strong: SONNET },
  });
}

describe("serializeMatrix and parseMatrix", () => {
  it("round-trips a report's matrix exactly", () => {
    const report = sampleReport();
    const parsed = parseMatrix(serializeMatrix(report));
    expect(parsed).toEqual({ ok: true, matrix: buildMatrix(report) });
  });

  it("writes the header the seed lists and one [[cell]] per measured cell", () => {
    const text = serializeMatrix(sampleReport());
    const raw = parse(text) as { header: Record<string, unknown>; cell: Record<string, unknown>[] };
    expect(raw.header).toEqual({
      declared_mde: 0.3,
      alpha: 0.05,
      power: 0.8,
      k: 1,
      cluster_key: "domain",
      planner: "deferred",
      pass_line: 0.5,
      generated_at: NOW,
    });
    expect(raw.cell.map((c) => `${c.domain}/${c.role}/${c.model}/${c.verdict}`)).toEqual([
      "config-edits/executor/claude-haiku-4-5/unresolved",
      "config-edits/executor/claude-sonnet-4-6/pass",
      "config-edits/verifier/claude-haiku-4-5/unresolved",
      "log-triage/executor/gpt-5.6-sol/unresolved",
    ]);
    expect(text).toMatch(/^\[header\]$/m);
    expect(text).toMatch(/^\[\[cell\]\]$/m);
  });

  it("leaves a statistic that could not be computed as an absent key", () => {
    const raw = parse(serializeMatrix(sampleReport())) as { cell: Record<string, unknown>[] };
    const single = raw.cell.find((c) => c.model === "gpt-5.6-sol")!;
    expect(single).toEqual({
      domain: "log-triage",
      role: "executor",
      runtime: "codex",
      model: "gpt-5.6-sol",
      n: 1,
      mean: 0,
      verdict: "unresolved",
      verdict_reason: "degenerate_interval",
    });
  });

  it("keeps the zero-observation cell in the report but not in the matrix", () => {
    const report = sampleReport();
    expect(report.cells.find((c) => c.domain === "log-triage" && c.model === HAIKU.model)).toMatchObject({
      n: 0,
      verdict_reason: "no_observations",
    });
    expect(buildMatrix(report).cells.some((c) => c.domain === "log-triage" && c.model === HAIKU.model)).toBe(false);
  });

  it("refuses to write a report its own reader would refuse", () => {
    const report = sampleReport();
    report.cells[0] = { ...report.cells[0]!, runtime: "gemini" as never };
    expect(() => serializeMatrix(report)).toThrow(MatrixRefusedError);
    try {
      serializeMatrix(report);
    } catch (err) {
      // Cells are written sorted, and "gemini" sorts after "claude".
      expect(err).toMatchObject({ reason: "unknown_runtime", path: "cell[1].runtime" });
    }
  });
});

const VALID = `
[header]
declared_mde = 0.1
alpha = 0.05
power = 0.8
k = 3
cluster_key = "domain"
planner = "deferred"
pass_line = 0.5
generated_at = "2026-12-01T09:00:00.000Z"

[[cell]]
domain = "config-edits"
role = "executor"
runtime = "claude"
model = "claude-sonnet-4-6"
n = 40
mean = 0.8
ci_low = 0.75
ci_high = 0.85
achieved_mde = 0.07
se_source = "clt_single_cluster"
verdict = "pass"
verdict_reason = "above_pass_line"

[[cell]]
domain = "config-edits"
role = "executor"
runtime = "claude"
model = "claude-haiku-4-5"
n = 6
mean = 0.5
ci_low = 0.1
ci_high = 0.9
achieved_mde = 0.63
verdict = "unresolved"
verdict_reason = "mde_not_resolved"
`;

function refusal(text: string) {
  const r = parseMatrix(text);
  if (r.ok) throw new Error("expected a refusal");
  return { reason: r.reason, path: r.path };
}

describe("parseMatrix refusals", () => {
  it("accepts the valid file", () => {
    expect(parseMatrix(VALID)).toMatchObject({
      ok: true,
      matrix: { header: { k: 3 }, cells: [{ model: "claude-sonnet-4-6" }, { model: "claude-haiku-4-5" }] },
    });
  });

  it("accepts a header with no cells", () => {
    expect(parseMatrix(VALID.split("[[cell]]")[0]!)).toMatchObject({ ok: true, matrix: { cells: [] } });
  });

  it("refuses a hand-edited duplicate cell", () => {
    const dup = VALID + VALID.slice(VALID.lastIndexOf("[[cell]]"));
    expect(refusal(dup)).toEqual({ reason: "duplicate_cell", path: "cell[2]" });
  });

  it("refuses an unknown runtime", () => {
    expect(refusal(VALID.replace('runtime = "claude"', 'runtime = "gemini"'))).toEqual({
      reason: "unknown_runtime",
      path: "cell[0].runtime",
    });
  });

  it("accepts every known runtime id", () => {
    for (const runtime of ["offline", "claude", "codex", "antigravity", "grok"]) {
      const text = VALID.replace('runtime = "claude"\nmodel = "claude-sonnet-4-6"', `runtime = "${runtime}"\nmodel = "m-${runtime}"`);
      expect(parseMatrix(text).ok).toBe(true);
    }
  });

  it("refuses a model of another family than its runtime serves", () => {
    expect(refusal(VALID.replace('model = "claude-sonnet-4-6"', 'model = "gpt-5.6-sol"'))).toEqual({
      reason: "model_runtime_mismatch",
      path: "cell[0].model",
    });
  });

  it("refuses a planner cell while the planner is deferred, and any other planner state", () => {
    expect(refusal(VALID.replace('role = "executor"', 'role = "planner"'))).toEqual({
      reason: "planner_cell_while_deferred",
      path: "cell[0].role",
    });
    expect(refusal(VALID.replace('planner = "deferred"', 'planner = "measured"'))).toEqual({
      reason: "invalid_field",
      path: "header.planner",
    });
  });

  it("refuses an unknown key", () => {
    expect(refusal(VALID.replace("n = 40", "n = 40\nwinner = true"))).toEqual({ reason: "unknown_key", path: "cell[0].winner" });
  });

  it("refuses a missing header field", () => {
    expect(refusal(VALID.replace("k = 3\n", ""))).toEqual({ reason: "invalid_field", path: "header.k" });
  });

  it("refuses a non-finite or out-of-range statistic", () => {
    expect(refusal(VALID.replace("mean = 0.8", "mean = nan"))).toEqual({ reason: "invalid_field", path: "cell[0].mean" });
    expect(refusal(VALID.replace("mean = 0.8", "mean = 1.2"))).toEqual({ reason: "invalid_field", path: "cell[0].mean" });
  });

  it("refuses half an interval and an interval that misses the mean", () => {
    expect(refusal(VALID.replace("ci_low = 0.75\n", ""))).toEqual({ reason: "interval_inconsistent", path: "cell[0]" });
    expect(refusal(VALID.replace("ci_low = 0.75", "ci_low = 0.82"))).toEqual({ reason: "interval_inconsistent", path: "cell[0]" });
  });

  it("refuses a resolved verdict its own numbers do not support", () => {
    expect(refusal(VALID.replace("achieved_mde = 0.07", "achieved_mde = 0.12"))).toEqual({
      reason: "verdict_inconsistent",
      path: "cell[0].verdict",
    });
    expect(refusal(VALID.replace("achieved_mde = 0.07\n", ""))).toEqual({ reason: "verdict_inconsistent", path: "cell[0].verdict" });
    expect(refusal(VALID.replace("ci_low = 0.75", "ci_low = 0.45"))).toEqual({ reason: "verdict_inconsistent", path: "cell[0].verdict" });
    expect(refusal(VALID.replace('verdict = "pass"', 'verdict = "fail"'))).toEqual({
      reason: "verdict_inconsistent",
      path: "cell[0].verdict",
    });
    expect(refusal(VALID.replace('verdict_reason = "mde_not_resolved"', 'verdict_reason = "above_pass_line"'))).toEqual({
      reason: "verdict_inconsistent",
      path: "cell[1].verdict",
    });
  });

  it("refuses a TOML syntax error", () => {
    expect(refusal(VALID.replace("[[cell]]", "[[cell]"))).toMatchObject({ reason: "toml_syntax" });
  });
});
