import { caseObservations, intervalStats, type IntervalStats, type MatrixRun } from "./cells";
import type { MatrixDesign, MeasuredRole, ModelRef } from "./design";
import { mcnemarExact, type McNemarResult } from "./stats";

/**
 * Which role to invest in (seed 002 "どの役割に投資するか"). With a weak and a strong model, each role
 * gets Δ = score(strong) − score(weak) paired per case, clustered by domain. A role is named the
 * bottleneck only when its interval excludes every other role's; otherwise the answer is `unresolved`,
 * which is a real answer. Beside each Δ, McNemar's exact test on the discordant pairs. This is the
 * decoupled form of a Shapley probe: roles are measured alone, so an interaction between roles is
 * invisible to it; read it as "which role to spend on first", never as a team-level attribution.
 */
export const DELTA_EXCLUSIONS = ["no_pairs", "degenerate_gold", "degenerate_interval"] as const;
export type DeltaExclusion = (typeof DELTA_EXCLUSIONS)[number];

export interface DeltaReport extends Omit<IntervalStats, "mean"> {
  role: MeasuredRole;
  weak: ModelRef;
  strong: ModelRef;
  /** Cases scored under both models (n is the same count). */
  delta?: number;
  /** Verifier Δ only: the paired cases' gold is of one class. */
  degenerate_gold?: boolean;
  /** Only when every paired case score is 0 or 1 (K = 1, or repeats that agree); else absent with a reason. */
  mcnemar?: McNemarResult;
  mcnemar_unavailable?: "no_pairs" | "non_binary_scores";
  /** Why this role cannot enter the bottleneck comparison; absent when it can. */
  excluded?: DeltaExclusion;
}

/** Δ for one role: the runs of that role, any domains; the weak and strong arms are picked by model. */
export function pairedDelta(
  role: MeasuredRole,
  runs: readonly MatrixRun[],
  weak: ModelRef,
  strong: ModelRef,
  design: MatrixDesign,
): DeltaReport {
  const arm = (m: ModelRef) =>
    new Map(
      caseObservations(runs.filter((r) => r.role === role && r.runtime === m.runtime && r.model === m.model)).map((o) => [
        `${o.domain}\u0000${o.case_id}`,
        o,
      ]),
    );
  const weakObs = arm(weak);
  const pairs = [...arm(strong).entries()].flatMap(([key, s]) => {
    const w = weakObs.get(key);
    return w ? [{ strong: s, weak: w }] : [];
  });
  const { mean, ...stats } = intervalStats(
    pairs.map((p) => ({ value: p.strong.score - p.weak.score, cluster: p.strong.domain })),
    design,
    -1,
    1,
  );
  const report: DeltaReport = { role, weak, strong, ...stats };
  if (mean !== undefined) report.delta = mean;
  if (role === "verifier" && pairs.length > 0) {
    const golds = new Set(pairs.map((p) => p.strong.gold));
    report.degenerate_gold = golds.size < 2;
  }
  const binary = pairs.every((p) => isBinary(p.strong.score) && isBinary(p.weak.score));
  if (pairs.length === 0) report.mcnemar_unavailable = "no_pairs";
  else if (!binary) report.mcnemar_unavailable = "non_binary_scores";
  else {
    const strongOnly = pairs.filter((p) => p.strong.score === 1 && p.weak.score === 0).length;
    const weakOnly = pairs.filter((p) => p.strong.score === 0 && p.weak.score === 1).length;
    report.mcnemar = mcnemarExact(strongOnly, weakOnly);
  }
  const excluded: DeltaExclusion | undefined =
    pairs.length === 0
      ? "no_pairs"
      : report.degenerate_gold
        ? "degenerate_gold"
        : stats.degenerate_interval || stats.ci_low === undefined
          ? "degenerate_interval"
          : undefined;
  if (excluded) report.excluded = excluded;
  return report;
}

function isBinary(v: number): boolean {
  return v === 0 || v === 1;
}

export type BottleneckReason = "interval_excludes_all_others" | "intervals_overlap" | "fewer_than_two_roles";

export interface Bottleneck {
  weak: ModelRef;
  strong: ModelRef;
  deltas: DeltaReport[];
  verdict: "resolved" | "unresolved";
  /** Present only when resolved. */
  role?: MeasuredRole;
  reason: BottleneckReason;
  /** Roles kept out of the comparison, each with its cause. */
  excluded: { role: MeasuredRole; reason: DeltaExclusion }[];
}

/** Names the bottleneck role only when its Δ interval lies wholly above every other comparable role's. */
export function decideBottleneck(deltas: readonly DeltaReport[], weak: ModelRef, strong: ModelRef): Bottleneck {
  const excluded = deltas.flatMap((d) => (d.excluded ? [{ role: d.role, reason: d.excluded }] : []));
  const comparable = deltas.filter((d) => !d.excluded && d.ci_low !== undefined && d.ci_high !== undefined);
  const base = { weak, strong, deltas: [...deltas], excluded };
  if (comparable.length < 2) return { ...base, verdict: "unresolved", reason: "fewer_than_two_roles" };
  const winner = comparable.find((d) => comparable.every((o) => o === d || d.ci_low! > o.ci_high!));
  return winner
    ? { ...base, verdict: "resolved", role: winner.role, reason: "interval_excludes_all_others" }
    : { ...base, verdict: "unresolved", reason: "intervals_overlap" };
}
