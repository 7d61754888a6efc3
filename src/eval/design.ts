import { RUNTIMES, type Runtime } from "../jobs/payloads";

/**
 * The vocabulary of the role × model capability matrix (issue 22; seed 002 "役割ごとのモデル選び (P2)").
 * A cell is one (domain, role, runtime, model). Every cell carries a three-state verdict: `pass` and
 * `fail` are resolved (the interval resolves the declared MDE and sits wholly above or below the pass
 * line), `unresolved` is everything else, with a reason token saying why. Unresolved is a real answer,
 * never a ranking input.
 */
export { RUNTIMES, type Runtime };

/** Roles the matrix schema can express. P2 measures executor and verifier; the planner is deferred. */
export const MATRIX_ROLES = ["planner", "executor", "verifier"] as const;
export type MatrixRole = (typeof MATRIX_ROLES)[number];
export const MEASURED_ROLES = ["executor", "verifier"] as const satisfies readonly MatrixRole[];
export type MeasuredRole = (typeof MEASURED_ROLES)[number];

export const MATRIX_VERDICTS = ["pass", "fail", "unresolved"] as const;
export type MatrixVerdict = (typeof MATRIX_VERDICTS)[number];

/** Why a cell got its verdict, in the order they are checked. */
export const VERDICT_REASONS = [
  "no_observations",
  "degenerate_gold",
  "degenerate_interval",
  "mde_not_resolved",
  "straddles_pass_line",
  "above_pass_line",
  "below_pass_line",
] as const;
export type VerdictReason = (typeof VERDICT_REASONS)[number];

export const CLUSTER_KEYS = ["domain"] as const;
export type ClusterKey = (typeof CLUSTER_KEYS)[number];

/** What a matrix run declares before it measures anything; written into the header. */
export interface MatrixDesign {
  /** Declared minimum detectable effect as a fraction (0.10 = 10 percentage points). */
  declared_mde: number;
  alpha: number;
  power: number;
  /** Repeats per case. */
  k: number;
  cluster_key: ClusterKey;
  /** The line a resolved cell is judged against: 0.5, chance for a pass rate or a PASS/FAIL agreement. */
  pass_line: number;
}

export const DEFAULT_DESIGN: MatrixDesign = { declared_mde: 0.1, alpha: 0.05, power: 0.8, k: 1, cluster_key: "domain", pass_line: 0.5 };

export interface ModelRef {
  runtime: Runtime;
  model: string;
}

/** The first problem with a design, or undefined when it is usable. */
export function designProblem(d: MatrixDesign): string | undefined {
  const open = (v: number) => Number.isFinite(v) && v > 0 && v < 1;
  if (!open(d.declared_mde)) return "declared_mde must be a fraction in (0, 1)";
  if (!open(d.alpha)) return "alpha must be in (0, 1)";
  if (!open(d.power)) return "power must be in (0, 1)";
  if (!Number.isInteger(d.k) || d.k < 1) return "k must be an integer ≥ 1";
  if (!(CLUSTER_KEYS as readonly string[]).includes(d.cluster_key)) return `cluster_key must be one of ${CLUSTER_KEYS.join(", ")}`;
  if (!open(d.pass_line)) return "pass_line must be in (0, 1)";
  return undefined;
}

export function isRuntime(value: string): value is Runtime {
  return (RUNTIMES as readonly string[]).includes(value);
}
