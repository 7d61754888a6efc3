import * as z from "zod";
import { EVAL_RUN_STATUSES } from "../../../db/schema";
import type { Bottleneck } from "../../../eval/compare";
import { DELTA_EXCLUSIONS } from "../../../eval/compare";
import type { currentMatrix } from "../../../eval/current";
import type { CellReport, IntervalStats } from "../../../eval/cells";
import { CLUSTER_KEYS, MATRIX_ROLES, MATRIX_VERDICTS, MEASURED_ROLES, RUNTIMES, VERDICT_REASONS } from "../../../eval/design";
import { MATRIX_REFUSALS, type MatrixCell } from "../../../eval/matrix";
import type { MatrixReport, ReportHeader } from "../../../eval/report";
import { matrixRequest, type startRun } from "../../../eval/run";
import type { Team2x2Report } from "../../../eval/team-2x2";
import { timestamp } from "./common";

const modelRef = z.object({ runtime: z.enum(RUNTIMES), model: z.string() });
const seSource = z.enum(["cluster_robust", "clt_single_cluster"]);

/** What the sample can resolve, said before anything runs (src/eval/run.ts `declaredResolution`). */
const declaredResolutionSchema = z.object({
  declared_mde: z.number(),
  alpha: z.number(),
  power: z.number(),
  cells: z.array(
    z.object({
      domain: z.string(),
      role: z.string(),
      runtime: z.string(),
      model: z.string(),
      n: z.number().int(),
      achievable_mde: z.number().nullable(),
      resolvable: z.boolean(),
    }),
  ),
  team_2x2: z.object({ rows: z.number().int(), achievable_mde: z.number().nullable() }).optional(),
});

/** `POST /v1/eval/matrix`: the measurement started. */
export const matrixRunStartedSchema = z.object({
  run_id: z.string(),
  status: z.literal("running"),
  total_jobs: z.number().int(),
  declared_resolution: declaredResolutionSchema,
}) satisfies z.ZodType<Awaited<ReturnType<typeof startRun>>>;

const reportHeaderSchema = z.object({
  declared_mde: z.number(),
  alpha: z.number(),
  power: z.number(),
  k: z.number().int(),
  cluster_key: z.enum(CLUSTER_KEYS),
  planner: z.literal("deferred"),
  pass_line: z.number(),
  generated_at: timestamp,
}) satisfies z.ZodType<ReportHeader>;

const matrixCellSchema = z.object({
  domain: z.string(),
  role: z.enum(MATRIX_ROLES),
  runtime: z.enum(RUNTIMES),
  model: z.string(),
  n: z.number().int(),
  mean: z.number(),
  ci_low: z.number().optional(),
  ci_high: z.number().optional(),
  achieved_mde: z.number().optional(),
  se_source: seSource.optional(),
  verdict: z.enum(MATRIX_VERDICTS),
  verdict_reason: z.enum(VERDICT_REASONS),
}) satisfies z.ZodType<MatrixCell>;

/** `GET /v1/eval/matrix`: the matrix the composer reads, or why the stored file is refused. */
export const currentMatrixSchema = z.union([
  z.object({ run_id: z.string(), toml: z.string(), matrix: z.object({ header: reportHeaderSchema, cells: z.array(matrixCellSchema) }) }),
  z.object({
    run_id: z.string(),
    toml: z.string(),
    refused: z.object({ reason: z.enum(MATRIX_REFUSALS), path: z.string(), detail: z.string() }),
  }),
]) satisfies z.ZodType<NonNullable<Awaited<ReturnType<typeof currentMatrix>>>>;

const intervalShape = {
  n: z.number().int(),
  n_clusters: z.number().int(),
  se_clt: z.number().optional(),
  se_clustered: z.number().optional(),
  se_used: z.number().optional(),
  se_source: seSource.optional(),
  ci_low: z.number().optional(),
  ci_high: z.number().optional(),
  achieved_mde: z.number().optional(),
  degenerate_interval: z.boolean(),
};
const intervalStatsSchema = z.object({ ...intervalShape, mean: z.number().optional() }) satisfies z.ZodType<IntervalStats>;

const rateReport = z.object({
  k: z.number().int(),
  n: z.number().int(),
  rate: z.number().optional(),
  wilson_low: z.number().optional(),
  wilson_high: z.number().optional(),
});

const cellReportSchema = z.object({
  domain: z.string(),
  role: z.enum(MATRIX_ROLES),
  runtime: z.enum(RUNTIMES),
  model: z.string(),
  n: z.number().int(),
  usable_runs: z.number().int(),
  unscored_runs: z.number().int(),
  n_clusters: z.number().int(),
  mean: z.number().optional(),
  se_clt: z.number().optional(),
  se_clustered: z.number().optional(),
  se_used: z.number().optional(),
  se_source: seSource.optional(),
  ci_low: z.number().optional(),
  ci_high: z.number().optional(),
  achieved_mde: z.number().optional(),
  degenerate_interval: z.boolean(),
  verdict: z.enum(MATRIX_VERDICTS),
  verdict_reason: z.enum(VERDICT_REASONS),
  verifier: z
    .object({
      gold_pass: z.number().int(),
      gold_fail: z.number().int(),
      unparseable: z.number().int(),
      degenerate_gold: z.boolean(),
      agreement: rateReport,
      false_accept: rateReport,
      false_reject: rateReport,
    })
    .optional(),
}) satisfies z.ZodType<CellReport>;

const bottleneckSchema = z.object({
  weak: modelRef,
  strong: modelRef,
  deltas: z.array(
    z.object({
      ...intervalShape,
      role: z.enum(MEASURED_ROLES),
      weak: modelRef,
      strong: modelRef,
      delta: z.number().optional(),
      degenerate_gold: z.boolean().optional(),
      mcnemar: z
        .object({ strong_only: z.number().int(), weak_only: z.number().int(), discordant: z.number().int(), p_value: z.number() })
        .optional(),
      mcnemar_unavailable: z.enum(["no_pairs", "non_binary_scores"]).optional(),
      excluded: z.enum(DELTA_EXCLUSIONS).optional(),
    }),
  ),
  verdict: z.enum(["resolved", "unresolved"]),
  role: z.enum(MEASURED_ROLES).optional(),
  reason: z.enum(["interval_excludes_all_others", "intervals_overlap", "fewer_than_two_roles"]),
  excluded: z.array(z.object({ role: z.enum(MEASURED_ROLES), reason: z.enum(DELTA_EXCLUSIONS) })),
}) satisfies z.ZodType<Bottleneck>;

const team2x2Schema = z.object({
  complete_rows: z.number().int(),
  incomplete_rows: z.number().int(),
  arms: z.object({ weak_weak: z.number(), strong_weak: z.number(), weak_strong: z.number(), strong_strong: z.number() }).optional(),
  planner_shapley: z.number().optional(),
  executor_shapley: z.number().optional(),
  difference: intervalStatsSchema,
  invest_first: z.enum(["planner", "executor", "unresolved"]),
  reason: z.enum(["difference_above_zero", "difference_below_zero", "difference_spans_zero", "degenerate_interval", "no_complete_rows"]),
}) satisfies z.ZodType<Team2x2Report>;

const matrixReportSchema = z.object({
  header: reportHeaderSchema,
  cells: z.array(cellReportSchema),
  bottleneck: bottleneckSchema.optional(),
  team_2x2: team2x2Schema.optional(),
}) satisfies z.ZodType<MatrixReport>;

/** `GET /v1/eval/matrix/:run_id`: progress and declared resolution up front, the report once done. */
export const matrixRunSchema = z.object({
  run_id: z.string(),
  status: z.enum(EVAL_RUN_STATUSES),
  stop_reason: z.string().optional(),
  /** The request as accepted (defaults filled in). */
  request: matrixRequest,
  /** As recorded with the run (`{}` for a run recorded without one). */
  declared_resolution: z.union([declaredResolutionSchema, z.object({})]),
  progress: z.object({
    total: z.number().int(),
    done: z.number().int(),
    in_flight: z.number().int(),
    pending: z.number().int(),
    skipped: z.number().int(),
  }),
  spend: z.object({ reported_usd: z.number(), runs_with_unknown_cost: z.number().int(), budget_usd: z.number().optional() }),
  report: matrixReportSchema.optional(),
  matrix_toml: z.string().optional(),
  matrix_refusal: z.object({ reason: z.enum(MATRIX_REFUSALS), path: z.string(), message: z.string() }).optional(),
  created_at: timestamp,
  ended_at: timestamp.optional(),
});

/** `GET /v1/eval/suites`: the shipped suites and their cases. */
export const evalSuitesSchema = z.object({
  suites: z.array(
    z.object({
      domain: z.string(),
      gold_pass: z.number().int(),
      gold_fail: z.number().int(),
      cases: z.array(z.object({ case_id: z.string(), title: z.string().nullable(), criteria: z.number().int(), verifier: z.boolean() })),
    }),
  ),
});
