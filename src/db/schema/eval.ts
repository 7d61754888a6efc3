import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const EVAL_RUN_STATUSES = ["running", "done", "stopped"] as const;

/**
 * One capability-matrix measurement (issue 22): what was asked, its declared resolution (known before
 * anything runs), its progress and spend, and when it ends the report and the `role_model_matrix.toml`
 * it wrote. Spend is what runs reported; a run whose cost nobody reported keeps its reservation.
 */
export const evalRuns = sqliteTable("eval_runs", {
  id: text("id").primaryKey(),
  status: text("status", { enum: EVAL_RUN_STATUSES }).notNull(),
  request: text("request", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  design: text("design", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  resolution: text("resolution", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  totalJobs: integer("total_jobs").notNull(),
  budgetUsd: real("budget_usd"),
  stopReason: text("stop_reason"),
  report: text("report", { mode: "json" }).$type<Record<string, unknown>>(),
  matrixToml: text("matrix_toml"),
  matrixRefusal: text("matrix_refusal", { mode: "json" }).$type<Record<string, unknown>>(),
  createdBy: text("created_by").notNull(),
  createdAt: text("created_at").notNull(),
  endedAt: text("ended_at"),
});
export type EvalRunRow = typeof evalRuns.$inferSelect;

export const EVAL_JOB_STATUSES = ["pending", "dispatched", "done", "skipped"] as const;

/**
 * The runs of one measurement, one row each (cell × case × repeat): the dispatch queue while
 * `pending`, then what the run yielded. `reserve_usd` is what it holds of the budget until it ends;
 * `cost_usd` what it reported (absent: unknown, and the reservation stands).
 */
export const evalJobs = sqliteTable(
  "eval_jobs",
  {
    runId: text("run_id").notNull(),
    seq: integer("seq").notNull(),
    role: text("role", { enum: ["executor", "verifier", "team_arm"] }).notNull(),
    runtime: text("runtime").notNull(),
    model: text("model").notNull(),
    domain: text("domain").notNull(),
    caseId: text("case_id").notNull(),
    repeat: integer("repeat").notNull(),
    status: text("status", { enum: EVAL_JOB_STATUSES }).notNull(),
    jobId: text("job_id"),
    /** Executor: PASS | FAIL | unscored. Verifier: PASS | FAIL | unparseable (the reply's verdict). */
    verdict: text("verdict"),
    detail: text("detail", { mode: "json" }).$type<Record<string, unknown>>(),
    reserveUsd: real("reserve_usd"),
    costUsd: real("cost_usd"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.seq] }),
    uniqueIndex("eval_jobs_job_idx").on(t.jobId),
    index("eval_jobs_status_idx").on(t.runId, t.status, t.seq),
  ],
);
export type EvalJobRow = typeof evalJobs.$inferSelect;

/** The matrix the composer reads (one row): the latest measurement that produced a valid file. */
export const evalMatrix = sqliteTable("eval_matrix", {
  id: integer("id").primaryKey(),
  runId: text("run_id").notNull(),
  toml: text("toml").notNull(),
  updatedAt: text("updated_at").notNull(),
});
