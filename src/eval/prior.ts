import type { CapabilityGap } from "../team/gate";
import { modelFamily, RUNTIME_FAMILY, TEAM_RUNTIMES, type ModelFamily, type TeamRuntime } from "../team/catalog";
import type { MatrixRole, Runtime } from "./design";
import type { MatrixCell, RoleModelMatrix } from "./matrix";

/**
 * What the composer and the gate read from a validated matrix (issue 22 part 5; seed 002 "composer は
 * これを事前分布として読みます"). Every condition narrows: unresolved cells are ignored outright, only
 * cells on the role's own runtime count, the winner keeps the role's model family, cells of one
 * (role, runtime, model) across domains are pooled n-weighted (the composer has no domain of its own),
 * and a lead smaller than the header's declared MDE is a tie, which is no winner: a ranking the sample
 * cannot support is not cited. Two conditions are the caller's, being configuration or I/O: an explicit
 * `[team.roles.*] model` wins over the matrix, and a runtime with no CLI or credentials on the host is
 * skipped. Anything unknown falls back to the pre-matrix cascade.
 */
export const PRIOR_REASONS = ["matrix_winner", "no_cells", "all_unresolved", "no_cell_in_family", "tie_within_mde"] as const;
export type PriorReason = (typeof PRIOR_REASONS)[number];

export interface PooledModel {
  model: string;
  /** Σ n over the model's resolved cells. */
  n: number;
  /** n-weighted mean over those cells. */
  mean: number;
  domains: string[];
}

export type MatrixPrior =
  | ({ ok: true; reason: "matrix_winner"; runtime: Runtime; runner_up?: PooledModel } & PooledModel)
  | { ok: false; reason: Exclude<PriorReason, "matrix_winner">; runner_up?: PooledModel; leader?: PooledModel };

export function matrixPrior(matrix: RoleModelMatrix, role: MatrixRole, runtime: Runtime, family: ModelFamily): MatrixPrior {
  const own = matrix.cells.filter((c) => c.role === role && c.runtime === runtime);
  if (own.length === 0) return { ok: false, reason: "no_cells" };
  const resolved = own.filter((c) => c.verdict !== "unresolved");
  if (resolved.length === 0) return { ok: false, reason: "all_unresolved" };
  // A model whose family is unknown cannot be shown to keep the role's family, so it is not a candidate.
  const candidates = resolved.filter((c) => modelFamily(c.model) === family);
  if (candidates.length === 0) return { ok: false, reason: "no_cell_in_family" };
  const [leader, runnerUp] = pool(candidates).sort((a, b) => b.mean - a.mean);
  if (runnerUp && leader!.mean - runnerUp.mean < matrix.header.declared_mde)
    return { ok: false, reason: "tie_within_mde", leader: leader!, runner_up: runnerUp };
  return { ok: true, reason: "matrix_winner", runtime, ...leader!, ...(runnerUp ? { runner_up: runnerUp } : {}) };
}

/** Resolved cells of one (role, runtime) pooled per model, n-weighted across domains. */
export function pool(cells: readonly MatrixCell[]): PooledModel[] {
  const byModel = new Map<string, { n: number; weighted: number; domains: string[] }>();
  for (const c of cells) {
    const m = byModel.get(c.model) ?? { n: 0, weighted: 0, domains: [] };
    m.n += c.n;
    m.weighted += c.n * c.mean;
    m.domains.push(c.domain);
    byModel.set(c.model, m);
  }
  return [...byModel.entries()].map(([model, m]) => ({ model, n: m.n, mean: m.weighted / m.n, domains: [...m.domains].sort() }));
}

export const GAP_REASONS = [
  "gap_at_least_mde",
  "runtime_has_no_family",
  "no_winner",
  "current_model_not_resolved",
  "current_model_is_winner",
  "gap_below_mde",
] as const;
export type GapReason = (typeof GAP_REASONS)[number];

/**
 * The gate's capability-gap signal with its reason: the n-weighted distance, in percentage points,
 * between the matrix winner for the executor's (role, runtime) and the model the role runs now. Both
 * sides must be resolved cells; a gap under the header's declared MDE is noise and yields no gap.
 */
export function explainCapabilityGap(
  matrix: RoleModelMatrix,
  role: MatrixRole,
  runtime: Runtime,
  currentModel: string,
): { gap?: CapabilityGap; reason: GapReason; prior?: MatrixPrior } {
  if (!isTeamRuntime(runtime)) return { reason: "runtime_has_no_family" };
  const prior = matrixPrior(matrix, role, runtime, RUNTIME_FAMILY[runtime]);
  if (!prior.ok) return { reason: "no_winner", prior };
  if (prior.model === currentModel) return { reason: "current_model_is_winner", prior };
  const current = pool(
    matrix.cells.filter((c) => c.role === role && c.runtime === runtime && c.model === currentModel && c.verdict !== "unresolved"),
  )[0];
  if (!current) return { reason: "current_model_not_resolved", prior };
  const gap = prior.mean - current.mean;
  if (!(gap >= matrix.header.declared_mde)) return { reason: "gap_below_mde", prior };
  // Scaling both by 100 keeps gap_pp ≥ mde_pp: multiplication by a positive constant is monotone.
  return { gap: { gap_pp: gap * 100, mde_pp: matrix.header.declared_mde * 100 }, reason: "gap_at_least_mde", prior };
}

/** The gap in the gate's shape (src/team/gate.ts CapabilityGap), or null when there is none to report. */
export function capabilityGap(matrix: RoleModelMatrix, role: MatrixRole, runtime: Runtime, currentModel: string): CapabilityGap | null {
  return explainCapabilityGap(matrix, role, runtime, currentModel).gap ?? null;
}

function isTeamRuntime(r: string): r is TeamRuntime {
  return (TEAM_RUNTIMES as readonly string[]).includes(r);
}
