import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The cost ledger: one row per completed runner job that ran a model, written in the same D1 batch
 * that records the job's completion (so a re-delivered notice adds nothing). A figure the CLI did not
 * report is NULL, never 0: a subscription runtime with no price has `cost_usd` NULL ("unknown").
 * `employee_id` and `project_id` say whose work it was, when the job names it.
 */
export const costEntries = sqliteTable(
  "cost_entries",
  {
    jobId: text("job_id").primaryKey(),
    at: text("at").notNull(),
    /** UTC day and month of `at`, kept as columns so the views and the budget sums read an index. */
    day: text("day").notNull(),
    month: text("month").notNull(),
    kind: text("kind").notNull(),
    runtime: text("runtime").notNull(),
    model: text("model"),
    ownerKind: text("owner_kind").notNull(),
    ownerId: text("owner_id").notNull(),
    employeeId: text("employee_id"),
    projectId: text("project_id"),
    inputTokens: integer("input_tokens"),
    outputTokens: integer("output_tokens"),
    cacheReadInputTokens: integer("cache_read_input_tokens"),
    cacheCreationInputTokens: integer("cache_creation_input_tokens"),
    costUsd: real("cost_usd"),
  },
  (t) => [
    index("cost_entries_month_employee_idx").on(t.month, t.employeeId),
    index("cost_entries_month_project_idx").on(t.month, t.projectId),
    index("cost_entries_day_idx").on(t.day),
  ],
);
export type CostEntryRow = typeof costEntries.$inferSelect;

export const BUDGET_SCOPES = ["company", "employee", "project"] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];

/**
 * The month's spend per employee, project and the company, kept up to date by the same D1 batch that
 * writes each ledger row (counted only for a row not yet written, so a re-delivered notice adds
 * nothing), and returned by it: a budget check reads no sum over the ledger. A figure no job
 * reported stays NULL; `priced_jobs` and `token_jobs` count the jobs that reported one.
 */
export const spendTotals = sqliteTable(
  "spend_totals",
  {
    scope: text("scope", { enum: BUDGET_SCOPES }).notNull(),
    /** The employee or project id; `company` for the whole company. */
    scopeId: text("scope_id").notNull(),
    month: text("month").notNull(),
    jobs: integer("jobs").notNull(),
    costUsd: real("cost_usd"),
    pricedJobs: integer("priced_jobs").notNull(),
    /** Input + output tokens (docs/spend.md "What counts"). */
    tokens: integer("tokens"),
    tokenJobs: integer("token_jobs").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.scopeId, t.month] })],
);
export type SpendTotalRow = typeof spendTotals.$inferSelect;

/**
 * What a monthly budget did this month, one row per scope and month: the 80 % warning and the 100 %
 * pause each happen once (the conditional write that sets them decides who acts), and a manager's
 * lift is kept beside them. A new month starts without a row, which is how the next month lifts a pause.
 */
export const budgetStates = sqliteTable(
  "budget_states",
  {
    scope: text("scope", { enum: BUDGET_SCOPES }).notNull(),
    /** The employee or project id; `company` for the company's budget. */
    scopeId: text("scope_id").notNull(),
    month: text("month").notNull(),
    warnedAt: text("warned_at"),
    exceededAt: text("exceeded_at"),
    liftedAt: text("lifted_at"),
    liftedBy: text("lifted_by"),
  },
  (t) => [primaryKey({ columns: [t.scope, t.scopeId, t.month] })],
);
export type BudgetStateRow = typeof budgetStates.$inferSelect;
