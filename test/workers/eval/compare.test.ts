import { describe, expect, it } from "vitest";
import type { MatrixRun } from "../../../src/eval/cells";
import { decideBottleneck, pairedDelta } from "../../../src/eval/compare";
import type { GoldVerdict } from "../../../src/eval/case-schema";
import { binaryRuns, design, HAIKU, SONNET, verifierRun } from "./helpers";

const Z = 1.959963984540054;

// Paired executor table over two domains (clusters):
//          a1 a2 a3 a4 | b1 b2 b3 b4
//   weak    0  0  1  0 |  1  0  0  1
//   strong  1  1  1  0 |  1  1  0  1
//   d       1  1  0  0 |  0  1  0  0      Δ = 3/8 = 0.375
// Residual sums: A 0.625+0.625−0.375−0.375 = 0.5, B −0.375+0.625−0.375−0.375 = −0.5;
// V = 2/(2−1) · 0.5 / 64 → SE 0.125; CI = 0.375 ± 0.244995. CLT: s² = (3 − 8·0.140625)/7 = 0.267857.
// McNemar: strong only a1, a2, b2 = 3, weak only 0 → p = 2 · 1/8 = 0.25.
const executorTable: MatrixRun[] = [
  ...binaryRuns("a", [0, 0, 1, 0], HAIKU),
  ...binaryRuns("b", [1, 0, 0, 1], HAIKU),
  ...binaryRuns("a", [1, 1, 1, 0], SONNET),
  ...binaryRuns("b", [1, 1, 0, 1], SONNET),
];

/** Verifier runs from agreement bits: reply = gold when 1, the other verdict when 0. */
function verifierTable(domain: string, golds: readonly GoldVerdict[], weak: readonly number[], strong: readonly number[]): MatrixRun[] {
  const flip = (g: GoldVerdict): GoldVerdict => (g === "PASS" ? "FAIL" : "PASS");
  return golds.flatMap((gold, i) => [
    verifierRun(domain, `c${i + 1}`, gold, weak[i] === 1 ? gold : flip(gold), HAIKU),
    verifierRun(domain, `c${i + 1}`, gold, strong[i] === 1 ? gold : flip(gold), SONNET),
  ]);
}
const MIXED: GoldVerdict[] = ["PASS", "FAIL", "PASS", "FAIL"];

describe("pairedDelta", () => {
  it("matches the hand-computed Δ, cluster-robust SE, interval and McNemar", () => {
    const d = pairedDelta("executor", executorTable, HAIKU, SONNET, design());
    expect(d).toMatchObject({
      role: "executor",
      n: 8,
      n_clusters: 2,
      delta: 0.375,
      se_source: "cluster_robust",
      degenerate_interval: false,
    });
    expect(d.se_clustered).toBeCloseTo(0.125, 12);
    expect(d.se_clt).toBeCloseTo(Math.sqrt(0.267857142857 / 8), 9);
    expect(d.ci_low).toBeCloseTo(0.375 - Z * 0.125, 12);
    expect(d.ci_high).toBeCloseTo(0.375 + Z * 0.125, 12);
    expect(d.mcnemar).toEqual({ strong_only: 3, weak_only: 0, discordant: 3, p_value: expect.closeTo(0.25, 12) });
    expect(d.excluded).toBeUndefined();
  });

  it("uses the CLT SE, labelled, when every pair sits in one cluster", () => {
    const oneDomain = executorTable.map((r) => ({ ...r, domain: "a", case_id: `${r.domain}${r.case_id}` }));
    const d = pairedDelta("executor", oneDomain, HAIKU, SONNET, design());
    expect(d).toMatchObject({ n_clusters: 1, se_source: "clt_single_cluster", delta: 0.375 });
    expect(d.se_used).toBeCloseTo(Math.sqrt(0.267857142857 / 8), 9);
    expect(d.se_clustered).toBeUndefined();
  });

  it("pairs only cases both models scored", () => {
    const runs = [...binaryRuns("a", [1, 0, 1], HAIKU), ...binaryRuns("a", [1, 1], SONNET)];
    expect(pairedDelta("executor", runs, HAIKU, SONNET, design())).toMatchObject({ n: 2, delta: 0.5 });
  });

  it("reports no pairs as an exclusion, with no made-up Δ", () => {
    const d = pairedDelta("executor", binaryRuns("a", [1, 0], HAIKU), HAIKU, SONNET, design());
    expect(d).toMatchObject({ n: 0, excluded: "no_pairs", mcnemar_unavailable: "no_pairs" });
    expect(d).not.toHaveProperty("delta");
  });

  it("leaves McNemar absent when repeats make a case score fractional", () => {
    const runs = [...binaryRuns("a", [1, 0], HAIKU), ...binaryRuns("a", [0, 0], HAIKU), ...binaryRuns("a", [1, 1], SONNET)];
    const d = pairedDelta("executor", runs, HAIKU, SONNET, design({ k: 2 }));
    expect(d).toMatchObject({ mcnemar_unavailable: "non_binary_scores" });
    expect(d).not.toHaveProperty("mcnemar");
  });

  it("marks a zero-width Δ degenerate and excludes it", () => {
    const runs = verifierTable("a", MIXED, [1, 1, 1, 1], [1, 1, 1, 1]);
    expect(pairedDelta("verifier", runs, HAIKU, SONNET, design())).toMatchObject({
      delta: 0,
      degenerate_interval: true,
      excluded: "degenerate_interval",
    });
  });

  it("excludes a verifier Δ over single-class gold", () => {
    const runs = verifierTable("a", ["FAIL", "FAIL", "FAIL"], [1, 0, 1], [1, 1, 1]);
    expect(pairedDelta("verifier", runs, HAIKU, SONNET, design())).toMatchObject({ degenerate_gold: true, excluded: "degenerate_gold" });
  });
});

describe("decideBottleneck", () => {
  // Verifier d: A = 0, 0, 0, −1; B = 0, 0, 0, 0 → Δ = −0.125, residual sums −0.5, 0.5 → SE 0.125,
  // CI high = −0.125 + 0.244995 = 0.119995 < executor CI low 0.130005: the executor interval excludes it.
  const verifierBelow = [
    ...verifierTable("a", MIXED, [1, 1, 1, 1], [1, 1, 1, 0]),
    ...verifierTable("b", MIXED, [1, 1, 1, 1], [1, 1, 1, 1]),
  ];

  function decide(runs: MatrixRun[]) {
    const deltas = (["executor", "verifier"] as const).map((role) => pairedDelta(role, runs, HAIKU, SONNET, design()));
    return decideBottleneck(deltas, HAIKU, SONNET);
  }

  it("names the role whose interval excludes every other role's", () => {
    const b = decide([...executorTable, ...verifierBelow]);
    expect(b.deltas[1]!.ci_high).toBeCloseTo(-0.125 + Z * 0.125, 12);
    expect(b).toMatchObject({ verdict: "resolved", role: "executor", reason: "interval_excludes_all_others", excluded: [] });
  });

  it("is unresolved when the intervals overlap", () => {
    // Verifier d: A = 1, 0, 0, 0; B = 0, 0, 0, 0 → Δ = 0.125, SE 0.125, CI [−0.12, 0.37] overlaps [0.13, 0.62].
    const overlapping = [
      ...verifierTable("a", MIXED, [0, 1, 1, 1], [1, 1, 1, 1]),
      ...verifierTable("b", MIXED, [1, 1, 1, 1], [1, 1, 1, 1]),
    ];
    const b = decide([...executorTable, ...overlapping]);
    expect(b).toMatchObject({ verdict: "unresolved", reason: "intervals_overlap" });
    expect(b).not.toHaveProperty("role");
  });

  it("refuses to resolve on a degenerate interval and says which role and why", () => {
    const flat = [...verifierTable("a", MIXED, [1, 1, 1, 1], [1, 1, 1, 1]), ...verifierTable("b", MIXED, [1, 1, 1, 1], [1, 1, 1, 1])];
    const b = decide([...executorTable, ...flat]);
    expect(b).toMatchObject({
      verdict: "unresolved",
      reason: "fewer_than_two_roles",
      excluded: [{ role: "verifier", reason: "degenerate_interval" }],
    });
  });

  it("keeps a degenerate-gold role out of the comparison", () => {
    const single = verifierTable("a", ["PASS", "PASS", "PASS"], [0, 1, 0], [1, 1, 1]);
    const b = decide([...executorTable, ...single]);
    expect(b).toMatchObject({ verdict: "unresolved", excluded: [{ role: "verifier", reason: "degenerate_gold" }] });
  });
});
