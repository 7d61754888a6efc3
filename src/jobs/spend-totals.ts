import type { BudgetScope } from "../db/schema";
import { costFiguresOf } from "./cost-figures";
import type { JobOwner } from "./payloads";

/**
 * The spend side of an inbox delivery (docs/spend.md): each completed job that reported usage or a
 * price gets its `cost_entries` row, and the month's `spend_totals` of its employee, its project and
 * the company grow by it, in the same D1 batch as the job's completion. The totals statement runs
 * first and counts only jobs the ledger does not have yet, so a re-delivered notice adds nothing;
 * it returns the totals it left, which this isolate keeps for the budget check after the job
 * (`deliveredSpend`): in the usual case that check then reads nothing from D1.
 */

/** One priced job, as the delivery binds it. */
export interface CostItem extends Record<string, unknown> {
  job_id: string;
  month: string;
  employee_id: string | null;
  project_id: string | null;
  cost_usd?: number;
  /** Input + output tokens, when the run reported either (docs/spend.md "What counts"). */
  tokens: number | null;
}

/** An inbox notice as far as its cost goes (`InboxNotice` in outcomes.ts, which imports this file). */
interface PricedNotice {
  job_id: string;
  kind: string;
  owner: JobOwner;
  status: string;
  at: string;
  result?: Record<string, unknown>;
  runtime?: string;
  employee_id?: string;
  project_id?: string;
}

/** The ledger row and totals item of a notice, or null (not a completion, or nothing reported). */
export function costItemOf(notice: PricedNotice): CostItem | null {
  const figures = notice.status === "completed" ? costFiguresOf(notice.result) : null;
  if (!figures) return null;
  const reported = figures.input_tokens !== undefined || figures.output_tokens !== undefined;
  return {
    ...figures,
    job_id: notice.job_id,
    at: notice.at,
    day: notice.at.slice(0, 10),
    month: notice.at.slice(0, 7),
    kind: notice.kind,
    runtime: notice.runtime ?? "unknown",
    owner_kind: notice.owner.kind,
    owner_id: notice.owner.id,
    employee_id: notice.employee_id ?? null,
    project_id: notice.project_id ?? null,
    tokens: reported ? Math.min((figures.input_tokens ?? 0) + (figures.output_tokens ?? 0), Number.MAX_SAFE_INTEGER) : null,
  };
}

/**
 * The totals of the jobs the ledger does not have yet, per employee, project and the company, added
 * to the month's rows. A figure no job reported stays NULL. Runs before INSERT_COST_ENTRIES.
 */
export const UPSERT_SPEND_TOTALS = `WITH n AS (
    SELECT value ->> 'month' AS month, value ->> 'employee_id' AS employee_id, value ->> 'project_id' AS project_id,
      value ->> 'cost_usd' AS usd, value ->> 'tokens' AS tokens
    FROM json_each(?1) WHERE NOT EXISTS (SELECT 1 FROM cost_entries WHERE cost_entries.job_id = value ->> 'job_id'))
  INSERT INTO spend_totals (scope, scope_id, month, jobs, cost_usd, priced_jobs, tokens, token_jobs)
  SELECT scope, scope_id, month, COUNT(*), SUM(usd), COUNT(usd), SUM(tokens), COUNT(tokens)
  FROM (SELECT 'employee' AS scope, employee_id AS scope_id, month, usd, tokens FROM n WHERE employee_id IS NOT NULL
        UNION ALL SELECT 'project', project_id, month, usd, tokens FROM n WHERE project_id IS NOT NULL
        UNION ALL SELECT 'company', 'company', month, usd, tokens FROM n)
  GROUP BY scope, scope_id, month
  ON CONFLICT (scope, scope_id, month) DO UPDATE SET jobs = jobs + excluded.jobs,
    cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN spend_totals.cost_usd ELSE COALESCE(spend_totals.cost_usd, 0) + excluded.cost_usd END,
    priced_jobs = priced_jobs + excluded.priced_jobs,
    tokens = CASE WHEN excluded.tokens IS NULL THEN spend_totals.tokens ELSE COALESCE(spend_totals.tokens, 0) + excluded.tokens END,
    token_jobs = token_jobs + excluded.token_jobs
  RETURNING scope, scope_id, month, jobs, cost_usd, priced_jobs, tokens, token_jobs`;

/**
 * The ledger rows. The model is what answered, else what the job asked for (its D1 row's payload).
 * "WHERE true" lets SQLite parse the upsert.
 */
export const INSERT_COST_ENTRIES = `INSERT INTO cost_entries (job_id, at, day, month, kind, runtime, model, owner_kind, owner_id, employee_id, project_id,
    input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, cost_usd)
  SELECT value ->> 'job_id', value ->> 'at', value ->> 'day', value ->> 'month', value ->> 'kind', value ->> 'runtime',
    COALESCE(value ->> 'model', (SELECT jobs.payload ->> 'model' FROM jobs WHERE jobs.id = value ->> 'job_id')),
    value ->> 'owner_kind', value ->> 'owner_id', value ->> 'employee_id', value ->> 'project_id', value ->> 'input_tokens',
    value ->> 'output_tokens', value ->> 'cache_read_input_tokens', value ->> 'cache_creation_input_tokens', value ->> 'cost_usd'
  FROM json_each(?1) WHERE true
  ON CONFLICT (job_id) DO NOTHING`;

/** A month's spend of one employee, project or the company, as `spend_totals` holds it. */
export interface SpendTotal {
  scope: BudgetScope;
  scope_id: string;
  month: string;
  jobs: number;
  cost_usd: number | null;
  priced_jobs: number;
  tokens: number | null;
  token_jobs: number;
}

/** What a delivery told this isolate about a job it carried: whose, which month, and the totals after it. */
export interface DeliveredSpend {
  month: string;
  employeeId: string | null;
  projectId: string | null;
  /** The total of a scope as of this job's delivery or later (totals only grow), if this isolate saw it. */
  total(scope: BudgetScope, id: string): SpendTotal | undefined;
}

const totals = new Map<string, SpendTotal>();
const jobs = new Map<string, { month: string; employeeId: string | null; projectId: string | null }>();
/** Bounds on what one isolate keeps: past them it forgets and the check reads D1 instead. */
const MAX_TOTALS = 20_000;
const MAX_JOBS = 10_000;

const totalKey = (scope: string, id: string, month: string) => `${scope}\u0000${id}\u0000${month}`;

/** Keeps what a delivery returned (the newest of each total: deliveries in flight together may resolve out of order). */
export function rememberDelivery(items: readonly CostItem[], returned: readonly SpendTotal[]): void {
  if (totals.size + returned.length > MAX_TOTALS) totals.clear();
  for (const t of returned) {
    const key = totalKey(t.scope, t.scope_id, t.month);
    const known = totals.get(key);
    if (!known || known.jobs < t.jobs) totals.set(key, t);
  }
  if (jobs.size + items.length > MAX_JOBS) jobs.clear();
  for (const item of items) jobs.set(item.job_id, { month: item.month, employeeId: item.employee_id, projectId: item.project_id });
}

/** What this isolate's delivery of `jobId` left (once: the entry is taken), or undefined. */
export function deliveredSpend(jobId: string): DeliveredSpend | undefined {
  const job = jobs.get(jobId);
  if (!job) return undefined;
  jobs.delete(jobId);
  return { ...job, total: (scope, id) => totals.get(totalKey(scope, id, job.month)) };
}
