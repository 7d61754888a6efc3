import { parse as parseToml, stringify as stringifyToml, TomlError } from "smol-toml";
import * as z from "zod";
import { modelFamily, RUNTIME_FAMILY, TEAM_RUNTIMES, type TeamRuntime } from "../team/catalog";
import { SLUG } from "./case-schema";
import {
  CLUSTER_KEYS,
  isRuntime,
  MATRIX_ROLES,
  MATRIX_VERDICTS,
  VERDICT_REASONS,
  type MatrixRole,
  type MatrixVerdict,
  type Runtime,
  type VerdictReason,
} from "./design";
import type { MatrixReport, ReportHeader } from "./report";

/**
 * `role_model_matrix.toml` (issue 22 part 4; seed 002 "何を書き出すか"): one `[header]` with the
 * declared MDE, α, power, K, cluster key and `planner = "deferred"`, and one `[[cell]]` per measured
 * cell. A statistic that could not be computed is an absent key; a cell with no usable observation has
 * no `[[cell]]`. The file is validated on write and on read, so a hand-edited duplicate cell, an unknown
 * runtime or a verdict its own numbers do not support is refused with a reason, never believed.
 * Fractions throughout (0.10 = 10 pp).
 */
export interface MatrixCell {
  domain: string;
  role: MatrixRole;
  runtime: Runtime;
  model: string;
  n: number;
  mean: number;
  ci_low?: number;
  ci_high?: number;
  achieved_mde?: number;
  se_source?: "cluster_robust" | "clt_single_cluster";
  verdict: MatrixVerdict;
  verdict_reason: VerdictReason;
}

export interface RoleModelMatrix {
  header: ReportHeader;
  cells: MatrixCell[];
}

export const MATRIX_REFUSALS = [
  "toml_syntax",
  "invalid_field",
  "unknown_key",
  "unknown_runtime",
  "model_runtime_mismatch",
  "planner_cell_while_deferred",
  "duplicate_cell",
  "interval_inconsistent",
  "verdict_inconsistent",
] as const;
export type MatrixRefusal = (typeof MATRIX_REFUSALS)[number];

export type ParseMatrixResult = { ok: true; matrix: RoleModelMatrix } | { ok: false; reason: MatrixRefusal; path: string; detail: string };

/** Thrown by serializeMatrix when the report would write a file the reader refuses (a bug upstream). */
export class MatrixRefusedError extends Error {
  constructor(
    readonly reason: MatrixRefusal,
    readonly path: string,
    detail: string,
  ) {
    super(`role_model_matrix.toml refused (${reason} at ${path}): ${detail}`);
    this.name = "MatrixRefusedError";
  }
}

const fraction = z.number().min(0).max(1);
const openFraction = z.number().gt(0).lt(1);

const fileSchema = z.strictObject({
  header: z.strictObject({
    declared_mde: openFraction,
    alpha: openFraction,
    power: openFraction,
    k: z.int().min(1),
    cluster_key: z.enum(CLUSTER_KEYS),
    planner: z.literal("deferred"),
    pass_line: openFraction,
    generated_at: z.iso.datetime({ offset: true }),
  }),
  cell: z
    .array(
      z.strictObject({
        domain: z.string().regex(SLUG),
        role: z.enum(MATRIX_ROLES),
        // Checked below, so an unknown runtime gets its own refusal token.
        runtime: z.string(),
        model: z.string().trim().min(1).max(200),
        n: z.int().min(1),
        mean: fraction,
        ci_low: fraction.optional(),
        ci_high: fraction.optional(),
        achieved_mde: z.number().min(0).optional(),
        se_source: z.enum(["cluster_robust", "clt_single_cluster"]).optional(),
        verdict: z.enum(MATRIX_VERDICTS),
        verdict_reason: z.enum(VERDICT_REASONS),
      }),
    )
    .default([]),
});

/** The matrix a report writes: its cells with at least one usable observation, in a stable order. */
export function buildMatrix(report: MatrixReport): RoleModelMatrix {
  const cells = report.cells.flatMap((c): MatrixCell[] => {
    if (c.n < 1 || c.mean === undefined) return [];
    return [
      {
        domain: c.domain,
        role: c.role,
        runtime: c.runtime,
        model: c.model,
        n: c.n,
        mean: c.mean,
        ...(c.ci_low !== undefined && c.ci_high !== undefined ? { ci_low: c.ci_low, ci_high: c.ci_high } : {}),
        ...(c.achieved_mde !== undefined ? { achieved_mde: c.achieved_mde } : {}),
        ...(c.se_source !== undefined ? { se_source: c.se_source } : {}),
        verdict: c.verdict,
        verdict_reason: c.verdict_reason,
      },
    ];
  });
  cells.sort((a, b) => compareKeys(cellKey(a), cellKey(b)));
  return { header: { ...report.header }, cells };
}

/** The file text for a report; throws MatrixRefusedError if it would not pass its own reader. */
export function serializeMatrix(report: MatrixReport): string {
  const matrix = buildMatrix(report);
  const checked = validateMatrix({ header: matrix.header, cell: matrix.cells });
  if (!checked.ok) throw new MatrixRefusedError(checked.reason, checked.path, checked.detail);
  const body = stringifyToml({ header: checked.matrix.header, cell: checked.matrix.cells });
  return `# role_model_matrix.toml: a measured prior, not a leaderboard. Unresolved cells rank nothing.\n${body}\n`;
}

export function parseMatrix(text: string): ParseMatrixResult {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    if (err instanceof TomlError)
      return { ok: false, reason: "toml_syntax", path: `line ${err.line}`, detail: err.message.split("\n")[0] ?? "" };
    throw err;
  }
  return validateMatrix(raw);
}

/** Structure, then the rules a hand edit could break. The first problem wins. */
export function validateMatrix(raw: unknown): ParseMatrixResult {
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = pathOf(issue.path);
    if (issue.code === "unrecognized_keys")
      return refuse("unknown_key", path === "" ? issue.keys.join(", ") : `${path}.${issue.keys.join(", ")}`, issue.message);
    return refuse("invalid_field", path || "(root)", issue.message);
  }
  const { header, cell } = parsed.data;
  const seen = new Set<string>();
  const cells: MatrixCell[] = [];
  for (const [i, c] of cell.entries()) {
    const at = `cell[${i}]`;
    const runtime = c.runtime;
    if (!isRuntime(runtime)) return refuse("unknown_runtime", `${at}.runtime`, `${JSON.stringify(runtime)} is not a runtime`);
    const family = modelFamily(c.model);
    if (isTeamRuntime(runtime) && family !== null && family !== RUNTIME_FAMILY[runtime]) {
      return refuse(
        "model_runtime_mismatch",
        `${at}.model`,
        `${c.model} is a ${family} model; ${runtime} serves ${RUNTIME_FAMILY[runtime]}`,
      );
    }
    if (c.role === "planner")
      return refuse(
        "planner_cell_while_deferred",
        `${at}.role`,
        'the header says planner = "deferred", so no planner cell can be measured',
      );
    const key = cellKey({ ...c, runtime });
    if (seen.has(key)) return refuse("duplicate_cell", at, `a second cell for (${c.domain}, ${c.role}, ${c.runtime}, ${c.model})`);
    seen.add(key);
    const interval = intervalProblem(c);
    if (interval) return refuse("interval_inconsistent", at, interval);
    const verdict = verdictProblem(c, header);
    if (verdict) return refuse("verdict_inconsistent", `${at}.verdict`, verdict);
    cells.push({ ...c, runtime });
  }
  return { ok: true, matrix: { header, cells } };
}

function intervalProblem(c: { mean: number; ci_low?: number; ci_high?: number }): string | undefined {
  if ((c.ci_low === undefined) !== (c.ci_high === undefined)) return "ci_low and ci_high are written together or not at all";
  if (c.ci_low !== undefined && c.ci_high !== undefined && !(c.ci_low <= c.mean && c.mean <= c.ci_high)) {
    return `the interval [${c.ci_low}, ${c.ci_high}] does not contain the mean ${c.mean}`;
  }
  return undefined;
}

const RESOLVED_REASON: Partial<Record<MatrixVerdict, VerdictReason>> = { pass: "above_pass_line", fail: "below_pass_line" };

function verdictProblem(c: Omit<MatrixCell, "runtime">, h: ReportHeader): string | undefined {
  if (c.verdict === "unresolved") {
    if (c.verdict_reason === "above_pass_line" || c.verdict_reason === "below_pass_line" || c.verdict_reason === "no_observations") {
      return `an unresolved cell cannot have verdict_reason ${c.verdict_reason}`;
    }
    return undefined;
  }
  if (c.verdict_reason !== RESOLVED_REASON[c.verdict]) return `verdict ${c.verdict} needs verdict_reason ${RESOLVED_REASON[c.verdict]}`;
  if (c.ci_low === undefined || c.ci_high === undefined || c.achieved_mde === undefined)
    return "a resolved cell needs its interval and achieved_mde";
  if (c.ci_low === c.ci_high) return "a zero-width interval is degenerate and cannot resolve";
  if (c.achieved_mde > h.declared_mde) return `achieved_mde ${c.achieved_mde} does not resolve the declared MDE ${h.declared_mde}`;
  if (c.verdict === "pass" && !(c.ci_low > h.pass_line)) return `pass needs ci_low above the pass line ${h.pass_line}`;
  if (c.verdict === "fail" && !(c.ci_high < h.pass_line)) return `fail needs ci_high below the pass line ${h.pass_line}`;
  return undefined;
}

function refuse(reason: MatrixRefusal, path: string, detail: string): ParseMatrixResult {
  return { ok: false, reason, path, detail };
}

function isTeamRuntime(r: string): r is TeamRuntime {
  return (TEAM_RUNTIMES as readonly string[]).includes(r);
}

function cellKey(c: Pick<MatrixCell, "domain" | "role" | "runtime" | "model">): string {
  return [c.domain, c.role, c.runtime, c.model].join("\u0000");
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function pathOf(path: readonly PropertyKey[]): string {
  let out = "";
  for (const seg of path) out += typeof seg === "number" ? `[${seg}]` : out === "" ? String(seg) : `.${String(seg)}`;
  return out;
}
