import { describe, expect, it } from "vitest";
import { buildMatrixReport } from "../../../src/eval/report";
import { binaryRuns, design, HAIKU, SONNET, verifierRun } from "./helpers";

const NOW = "2026-12-01T09:00:00.000Z";

describe("buildMatrixReport", () => {
  it("writes the declared design into the header, planner deferred", () => {
    const report = buildMatrixReport({ design: design({ k: 3 }), generated_at: NOW, runs: [] });
    expect(report).toEqual({
      header: {
        declared_mde: 0.1,
        alpha: 0.05,
        power: 0.8,
        k: 3,
        cluster_key: "domain",
        planner: "deferred",
        pass_line: 0.5,
        generated_at: NOW,
      },
      cells: [],
    });
  });

  it("adds a Δ per measured role and the bottleneck when weak and strong are given", () => {
    const report = buildMatrixReport({
      design: design(),
      generated_at: NOW,
      runs: [...binaryRuns("a", [0, 1, 0], HAIKU), ...binaryRuns("a", [1, 1, 0], SONNET), verifierRun("a", "c1", "PASS", "PASS")],
      compare: { weak: HAIKU, strong: SONNET },
    });
    expect(report.bottleneck).toMatchObject({
      verdict: "unresolved",
      reason: "fewer_than_two_roles",
      excluded: [{ role: "verifier", reason: "no_pairs" }],
    });
    expect(report.bottleneck!.deltas.map((d) => [d.role, d.n])).toEqual([
      ["executor", 3],
      ["verifier", 0],
    ]);
  });

  it("adds the team 2×2 when its rows were run", () => {
    const report = buildMatrixReport({
      design: design(),
      generated_at: NOW,
      runs: [],
      team_2x2: [{ domain: "a", case_id: "r1", planner: "weak", executor: "weak", verdict: "PASS" }],
    });
    expect(report.team_2x2).toMatchObject({ complete_rows: 0, incomplete_rows: 1, invest_first: "unresolved" });
  });

  it("survives a JSON round trip unchanged (no NaN, no undefined values)", () => {
    const report = buildMatrixReport({
      design: design(),
      generated_at: NOW,
      runs: [...binaryRuns("a", [1], HAIKU), ...binaryRuns("a", [1, 0, 1], SONNET)],
      compare: { weak: HAIKU, strong: SONNET },
    });
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  });

  it("refuses a design it cannot honour", () => {
    expect(() => buildMatrixReport({ design: design({ declared_mde: 0 }), generated_at: NOW, runs: [] })).toThrow(/declared_mde/);
    expect(() => buildMatrixReport({ design: design({ k: 1.5 }), generated_at: NOW, runs: [] })).toThrow(/k must/);
    expect(() => buildMatrixReport({ design: design({ power: 1 }), generated_at: NOW, runs: [] })).toThrow(/power/);
  });
});
