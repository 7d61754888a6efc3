import { describe, expect, it } from "vitest";
import { cellReport, cellReports, type MatrixRun } from "../../../src/eval/cells";
import { design, executorRuns, HAIKU, verifierRun } from "./helpers";

const EXEC = { domain: "config-edits", role: "executor", ...HAIKU } as const;
const VERIFY = { domain: "config-edits", role: "verifier", ...HAIKU } as const;
const Z = 1.959963984540054;
const Z_SUM = Z + 0.8416212335729143;

describe("executor cells", () => {
  // P,P,P,F,F: mean 0.6, s² = (3·0.16 + 2·0.36)/4 = 0.3, SE = √(0.3/5) = 0.244949 (one cluster: CLT),
  // CI = 0.6 ± 0.480091 clipped to [0.119909, 1], MDE = 2.801585 · 0.244949 = 0.686245 > 0.10.
  it("reports the hand-computed statistics of a small single-domain cell", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", ["PASS", "PASS", "PASS", "FAIL", "FAIL"]), design());
    expect(row).toMatchObject({
      n: 5,
      usable_runs: 5,
      unscored_runs: 0,
      n_clusters: 1,
      mean: 0.6,
      se_source: "clt_single_cluster",
      ci_high: 1,
    });
    expect(row.se_used).toBeCloseTo(Math.sqrt(0.06), 12);
    expect(row.se_clustered).toBeUndefined();
    expect(row.ci_low).toBeCloseTo(0.6 - Z * Math.sqrt(0.06), 12);
    expect(row.achieved_mde).toBeCloseTo(Z_SUM * Math.sqrt(0.06), 12);
    expect(row).toMatchObject({ degenerate_interval: false, verdict: "unresolved", verdict_reason: "mde_not_resolved" });
  });

  it("averages a case's K repeats before counting it once", () => {
    const runs = [...executorRuns("d", ["PASS", "FAIL"], HAIKU, "a"), ...executorRuns("d", ["PASS", "PASS"], HAIKU, "a")];
    // a1: PASS, PASS → 1; a2: FAIL, PASS → 0.5.
    const row = cellReport({ ...EXEC, domain: "d" }, runs, design({ k: 2 }));
    expect(row).toMatchObject({ n: 2, usable_runs: 4, mean: 0.75 });
  });

  it("excludes unscored runs from the statistics and counts them", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", ["PASS", "unscored", "FAIL", "unscored"]), design());
    expect(row).toMatchObject({ n: 2, usable_runs: 2, unscored_runs: 2, mean: 0.5 });
  });

  it("keeps a row with no statistics for a cell with zero usable observations", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", ["unscored", "unscored"]), design());
    expect(row).toEqual({
      ...EXEC,
      usable_runs: 0,
      unscored_runs: 2,
      n: 0,
      n_clusters: 0,
      degenerate_interval: false,
      verdict: "unresolved",
      verdict_reason: "no_observations",
    });
  });

  it("marks n = 1 degenerate and leaves the SE, interval and MDE absent", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", ["PASS"]), design());
    expect(row).toMatchObject({ n: 1, mean: 1, degenerate_interval: true, verdict: "unresolved", verdict_reason: "degenerate_interval" });
    for (const key of ["se_clt", "se_used", "se_source", "ci_low", "ci_high", "achieved_mde"]) expect(row).not.toHaveProperty(key);
  });

  it("marks identical observations degenerate: a zero-width interval is not precision", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", ["PASS", "PASS", "PASS", "PASS"]), design({ declared_mde: 0.5 }));
    expect(row).toMatchObject({
      se_used: 0,
      ci_low: 1,
      ci_high: 1,
      achieved_mde: 0,
      degenerate_interval: true,
      verdict: "unresolved",
      verdict_reason: "degenerate_interval",
    });
  });

  // 9 of 10: s² = 0.9/9 = 0.1, SE = 0.1, CI = [0.704004, 1], MDE = 0.280159 ≤ 0.3 → pass.
  it("resolves pass when the interval clears the MDE and sits above the pass line", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", [...Array(9).fill("PASS"), "FAIL"]), design({ declared_mde: 0.3 }));
    expect(row.ci_low).toBeCloseTo(0.9 - Z * 0.1, 12);
    expect(row).toMatchObject({ verdict: "pass", verdict_reason: "above_pass_line" });
  });

  it("resolves fail below the pass line", () => {
    const row = cellReport(EXEC, executorRuns("config-edits", ["PASS", ...Array(9).fill("FAIL")]), design({ declared_mde: 0.3 }));
    expect(row).toMatchObject({ ci_low: 0, verdict: "fail", verdict_reason: "below_pass_line" });
  });

  // 5 of 10: SE = √(0.25·10/9/10) = 1/6, MDE = 0.466931 ≤ 0.5, but [0.173, 0.827] spans 0.5.
  it("stays unresolved when a resolving interval straddles the pass line", () => {
    const row = cellReport(
      EXEC,
      executorRuns("config-edits", [...Array(5).fill("PASS"), ...Array(5).fill("FAIL")]),
      design({ declared_mde: 0.5 }),
    );
    expect(row.se_used).toBeCloseTo(1 / 6, 12);
    expect(row).toMatchObject({ verdict: "unresolved", verdict_reason: "straddles_pass_line" });
  });
});

describe("verifier cells", () => {
  // Gold P,P,P,F,F,F; replies P,P,F,P,F,unparseable. Parseable 5; agreement 3/5; false accept
  // (PASS on gold FAIL) 1/2; false reject (FAIL on gold PASS) 1/3; the unparseable reply counts in none.
  const runs: MatrixRun[] = [
    verifierRun("config-edits", "c1", "PASS", "PASS"),
    verifierRun("config-edits", "c2", "PASS", "PASS"),
    verifierRun("config-edits", "c3", "PASS", "FAIL"),
    verifierRun("config-edits", "c4", "FAIL", "PASS"),
    verifierRun("config-edits", "c5", "FAIL", "FAIL"),
    verifierRun("config-edits", "c6", "FAIL", "unparseable"),
  ];

  it("reports agreement, false-accept and false-reject rates with Wilson intervals, unparseable excluded", () => {
    const row = cellReport(VERIFY, runs, design());
    expect(row).toMatchObject({ n: 5, usable_runs: 5, mean: 0.6 });
    const v = row.verifier!;
    expect(v).toMatchObject({ gold_pass: 3, gold_fail: 2, unparseable: 1, degenerate_gold: false });
    expect(v.agreement).toMatchObject({ k: 3, n: 5, rate: 0.6 });
    // Wilson 3/5: center 0.556552, half 0.325828.
    expect(v.agreement.wilson_low).toBeCloseTo(0.230724, 5);
    expect(v.agreement.wilson_high).toBeCloseTo(0.88238, 5);
    expect(v.false_accept).toMatchObject({ k: 1, n: 2, rate: 0.5 });
    expect(v.false_reject).toMatchObject({ k: 1, n: 3, rate: 1 / 3 });
  });

  it("keeps a verifier that never answers in the asked form out of every rate", () => {
    const row = cellReport(
      VERIFY,
      [verifierRun("config-edits", "c1", "PASS", "unparseable"), verifierRun("config-edits", "c2", "FAIL", "unparseable")],
      design(),
    );
    expect(row).toMatchObject({ n: 0, verdict: "unresolved", verdict_reason: "no_observations" });
    expect(row.verifier).toEqual({
      gold_pass: 0,
      gold_fail: 0,
      unparseable: 2,
      degenerate_gold: false,
      agreement: { k: 0, n: 0 },
      false_accept: { k: 0, n: 0 },
      false_reject: { k: 0, n: 0 },
    });
  });

  // Seed 002 smoke 1: all-FAIL gold made an always-FAIL verifier score 1.00. Here 9/10 agreement on
  // single-class gold would resolve pass at MDE 0.3, but the conclusion is withheld; the numbers stay.
  it("forces unresolved on single-class gold and still reports the statistics", () => {
    const single = Array.from({ length: 10 }, (_, i) => verifierRun("config-edits", `c${i}`, "FAIL", i === 0 ? "PASS" : "FAIL"));
    const row = cellReport(VERIFY, single, design({ declared_mde: 0.3 }));
    expect(row).toMatchObject({
      mean: 0.9,
      verdict: "unresolved",
      verdict_reason: "degenerate_gold",
      verifier: { gold_pass: 0, gold_fail: 10, degenerate_gold: true },
    });
    expect(row.ci_low).toBeDefined();
  });
});

describe("cellReports", () => {
  it("groups runs into one row per (domain, role, runtime, model), sorted", () => {
    const rows = cellReports(
      [
        ...executorRuns("log-triage", ["PASS"]),
        verifierRun("config-edits", "c1", "PASS", "PASS"),
        ...executorRuns("config-edits", ["PASS", "FAIL"]),
        ...executorRuns("config-edits", ["FAIL"], { runtime: "codex", model: "gpt-5.6-sol" }),
      ],
      design(),
    );
    expect(rows.map((r) => `${r.domain}/${r.role}/${r.runtime}/${r.model}/${r.n}`)).toEqual([
      "config-edits/executor/claude/claude-haiku-4-5/2",
      "config-edits/executor/codex/gpt-5.6-sol/1",
      "config-edits/verifier/claude/claude-haiku-4-5/1",
      "log-triage/executor/claude/claude-haiku-4-5/1",
    ]);
  });
});
