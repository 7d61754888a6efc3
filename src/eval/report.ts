import { cellReports, type CellReport, type MatrixRun } from "./cells";
import { decideBottleneck, pairedDelta, type Bottleneck } from "./compare";
import { designProblem, MEASURED_ROLES, type ClusterKey, type MatrixDesign, type ModelRef } from "./design";
import { team2x2, type Team2x2Report, type TeamArmRun } from "./team-2x2";

/**
 * The JSON report of one matrix measurement (issue 22 part 4): the declared design, one row per cell
 * that had runs (a cell with zero usable observations keeps its row, with `n: 0` and no statistics),
 * the weak/strong bottleneck comparison when asked for, and the team 2×2 when its rows were run.
 * `role_model_matrix.toml` (matrix.ts) is derived from it.
 */
export interface ReportHeader {
  declared_mde: number;
  alpha: number;
  power: number;
  k: number;
  cluster_key: ClusterKey;
  /** The matrix measures executor and verifier cells; the planner role has none (seed 002). */
  planner: "deferred";
  pass_line: number;
  /** ISO 8601, from the injected clock. */
  generated_at: string;
}

export interface MatrixReport {
  header: ReportHeader;
  cells: CellReport[];
  bottleneck?: Bottleneck;
  team_2x2?: Team2x2Report;
}

export interface MatrixReportInput {
  design: MatrixDesign;
  generated_at: string;
  runs: readonly MatrixRun[];
  /** The weak and strong models each role's Δ compares. */
  compare?: { weak: ModelRef; strong: ModelRef };
  team_2x2?: readonly TeamArmRun[];
}

export function buildMatrixReport(input: MatrixReportInput): MatrixReport {
  const problem = designProblem(input.design);
  if (problem) throw new RangeError(`matrix design: ${problem}`);
  const { design } = input;
  const header: ReportHeader = {
    declared_mde: design.declared_mde,
    alpha: design.alpha,
    power: design.power,
    k: design.k,
    cluster_key: design.cluster_key,
    planner: "deferred",
    pass_line: design.pass_line,
    generated_at: input.generated_at,
  };
  const report: MatrixReport = { header, cells: cellReports(input.runs, design) };
  if (input.compare) {
    const { weak, strong } = input.compare;
    const deltas = MEASURED_ROLES.map((role) => pairedDelta(role, input.runs, weak, strong, design));
    report.bottleneck = decideBottleneck(deltas, weak, strong);
  }
  if (input.team_2x2) report.team_2x2 = team2x2(input.team_2x2, design);
  return report;
}
