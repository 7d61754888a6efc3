import { and, eq, isNull, or, sql, type SQL } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { BUDGET_SCOPES, budgetStates, costEntries, spendTotals, type BudgetScope, type BudgetStateRow } from "../db/schema";
import type { Env } from "../env";
import { costFiguresOf } from "../jobs/cost-figures";
import { monthOf, syncHoldsEverywhere } from "../jobs/holds";
import type { JobEnd } from "../jobs/job-end";
import { deliveredSpend, type SpendTotal } from "../jobs/spend-totals";
import { loadClock } from "../lib/clock";
import { readSectionCached } from "../lib/config";
import { AppError } from "../lib/errors";
import { appendEventWhere } from "../lib/guarded-insert";
import { pauseEmployee } from "../tasks/employee-lifecycle";
import { anyBudget, budgetsConfig, type BudgetLimit, type BudgetsConfig } from "./config";

type SpendEnv = Pick<Env, "DB" | "RUNNER_INBOX" | "ENVIRONMENT">;

/** What a scope spent this month; null is unknown (no job of it reported that figure), never 0. */
export interface Spent {
  usd: number | null;
  /** Input + output tokens (docs/spend.md "What counts"). */
  tokens: number | null;
}

export type BudgetAction = "none" | "warn" | "exceed";
export type BudgetState = "ok" | "warning" | "exceeded" | "lifted";

/** One configured budget: whose, and its limit. */
export interface BudgetRef {
  scope: BudgetScope;
  id: string;
  limit: BudgetLimit;
}

// ---------------------------------------------------------------- the functional core

/**
 * How much of the limit is spent: the larger share over the dimensions the limit sets and the
 * spend knows. Null when no such dimension is known (a dollar limit over jobs that priced nothing).
 */
export function budgetRatio(spent: Spent, limit: BudgetLimit): number | null {
  const shares: number[] = [];
  if (limit.monthly_usd !== undefined && spent.usd !== null) shares.push(spent.usd / limit.monthly_usd);
  if (limit.monthly_tokens !== undefined && spent.tokens !== null) shares.push(spent.tokens / limit.monthly_tokens);
  return shares.length > 0 ? Math.max(...shares) : null;
}

/**
 * What a budget must do now that `spent` is known: `exceed` at 100 % if the month has not recorded
 * it yet, `warn` at `warnRatio` if it has recorded neither, else `none`. An unknown figure cannot
 * cross anything: it counts as nothing spent, which is all that is known of it.
 */
export function budgetDecision(
  spent: Spent,
  limit: BudgetLimit,
  warnRatio: number,
  state: Pick<BudgetStateRow, "warnedAt" | "exceededAt"> | null | undefined,
): BudgetAction {
  const ratio = budgetRatio(spent, limit) ?? 0;
  if (ratio >= 1 && !state?.exceededAt) return "exceed";
  if (ratio >= warnRatio && !state?.warnedAt && !state?.exceededAt) return "warn";
  return "none";
}

/** A budget's state this month, as the views show it (a lift outranks the crossing it lifted). */
export function budgetStateOf(state: Pick<BudgetStateRow, "warnedAt" | "exceededAt" | "liftedAt"> | null | undefined): BudgetState {
  if (state?.liftedAt) return "lifted";
  if (state?.exceededAt) return "exceeded";
  if (state?.warnedAt) return "warning";
  return "ok";
}

const own = <T>(record: Record<string, T>, key: string | null): T | undefined =>
  key !== null && Object.hasOwn(record, key) ? record[key] : undefined;

/** The configured budgets a job of `employeeId` in `projectId` counts toward. */
export function budgetsOfJob(config: BudgetsConfig, employeeId: string | null, projectId: string | null): BudgetRef[] {
  const refs: BudgetRef[] = [];
  const employee = own(config.employees, employeeId);
  if (employee) refs.push({ scope: "employee", id: employeeId!, limit: employee });
  const project = own(config.projects, projectId);
  if (project) refs.push({ scope: "project", id: projectId!, limit: project });
  if (config.company) refs.push({ scope: "company", id: "company", limit: config.company });
  return refs;
}

/** The limit configured for one budget, if any. */
export function limitOf(config: BudgetsConfig, scope: BudgetScope, id: string): BudgetLimit | undefined {
  if (scope === "company") return id === "company" ? config.company : undefined;
  return own(scope === "employee" ? config.employees : config.projects, id);
}

/** Every configured budget: the company's, then each employee's and project's. */
export function configuredBudgets(config: BudgetsConfig): BudgetRef[] {
  return [
    ...(config.company ? [{ scope: "company" as const, id: "company", limit: config.company }] : []),
    ...Object.entries(config.employees).map(([id, limit]) => ({ scope: "employee" as const, id, limit })),
    ...Object.entries(config.projects).map(([id, limit]) => ({ scope: "project" as const, id, limit })),
  ];
}

/** The feed subject of a budget: its hold key (`employee:<id>`, `project:<id>`, `company`). */
export function budgetSubject(scope: BudgetScope, id: string): string {
  return scope === "company" ? "company" : `${scope}:${id}`;
}

// ---------------------------------------------------------------- reading the month

const spentOf = (row: SpendTotal | undefined): Spent => ({
  usd: row && row.priced_jobs > 0 ? row.cost_usd : null,
  tokens: row && row.token_jobs > 0 ? row.tokens : null,
});

/**
 * `spend_totals` rows of these budgets this month: per scope one seek on its primary key (scope, id,
 * month), the ids bound as one JSON array (D1 allows 100 bound values a statement, a config may name more).
 */
function totalsOf(refs: readonly BudgetRef[], month: string): SQL {
  const terms = BUDGET_SCOPES.flatMap((scope) => {
    const ids = refs.filter((r) => r.scope === scope).map((r) => r.id);
    if (ids.length === 0) return [];
    return [
      sql`(${spendTotals.scope} = ${scope} AND ${spendTotals.scopeId} IN (SELECT value FROM json_each(${JSON.stringify(ids)})) AND ${spendTotals.month} = ${month})`,
    ];
  });
  return terms.length > 0 ? or(...terms)! : sql`0`;
}

/**
 * The month's spend of each budget (its `spend_totals` row) and every budget state of the month
 * (rows exist only for budgets that crossed something or were lifted), in one batch.
 */
export async function readBudgetMonth(
  db: Db,
  refs: readonly BudgetRef[],
  month: string,
): Promise<{ spent: Spent[]; states: Map<string, BudgetStateRow> }> {
  const [states, rows] = await db.batch([
    db.select().from(budgetStates).where(eq(budgetStates.month, month)),
    db
      .select({
        scope: spendTotals.scope,
        scope_id: spendTotals.scopeId,
        month: spendTotals.month,
        jobs: spendTotals.jobs,
        cost_usd: spendTotals.costUsd,
        priced_jobs: spendTotals.pricedJobs,
        tokens: spendTotals.tokens,
        token_jobs: spendTotals.tokenJobs,
      })
      .from(spendTotals)
      .where(totalsOf(refs, month)),
  ]);
  const byScope = new Map(rows.map((r) => [budgetSubject(r.scope, r.scope_id), r]));
  for (const s of states) stateSeen(s);
  return {
    spent: refs.map((r) => spentOf(byScope.get(budgetSubject(r.scope, r.id)))),
    states: new Map(states.map((s) => [budgetSubject(s.scope, s.scopeId), s])),
  };
}

/**
 * What this isolate has seen recorded of each budget this month (the warning, the excess): both only
 * ever get set within a month, so a check whose crossing is already recorded can skip D1.
 */
const recorded = new Map<string, { warned: boolean; exceeded: boolean }>();

function stateSeen(s: Pick<BudgetStateRow, "scope" | "scopeId" | "month" | "warnedAt" | "exceededAt">): void {
  if (recorded.size > 20_000) recorded.clear();
  const key = `${budgetSubject(s.scope, s.scopeId)}\u0000${s.month}`;
  const known = recorded.get(key);
  recorded.set(key, { warned: Boolean(s.warnedAt) || Boolean(known?.warned), exceeded: Boolean(s.exceededAt) || Boolean(known?.exceeded) });
}

/** Whether `budgetDecision` could do anything for this spend, as far as this isolate knows the month's state. */
function mayCross(ref: BudgetRef, month: string, spent: Spent, warnRatio: number): boolean {
  const ratio = budgetRatio(spent, ref.limit) ?? 0;
  if (ratio < warnRatio) return false;
  const known = recorded.get(`${budgetSubject(ref.scope, ref.id)}\u0000${month}`);
  if (known?.exceeded) return false;
  return ratio >= 1 || !known?.warned;
}

// ---------------------------------------------------------------- acting on a crossing

export interface Crossing {
  scope: BudgetScope;
  id: string;
  action: Exclude<BudgetAction, "none">;
  /** Whether this call recorded it (a concurrent one may have been first). */
  recorded: boolean;
}

/**
 * Checks each budget against the month's spend and records what crossed: the warning once, the
 * excess once. Each record is one conditional write with its events in the same batch, so of two
 * checks racing over the same crossing exactly one records it, and only that one stops the work
 * (pauses the employee; syncs the project's or the company's hold to every inbox).
 */
export async function evaluateBudgets(
  env: SpendEnv,
  db: Db,
  warnRatio: number,
  refs: readonly BudgetRef[],
  month: string,
  now: Date,
): Promise<Crossing[]> {
  if (refs.length === 0) return [];
  const { spent, states } = await readBudgetMonth(db, refs, month);
  const crossings: Crossing[] = [];
  for (const [i, ref] of refs.entries()) {
    const state = states.get(budgetSubject(ref.scope, ref.id));
    const action = budgetDecision(spent[i]!, ref.limit, warnRatio, state);
    if (action === "none") continue;
    const recorded = await recordCrossing(db, ref, month, spent[i]!, warnRatio, action, now);
    crossings.push({ scope: ref.scope, id: ref.id, action, recorded });
    // A crossing recorded late for a month that is over stops nothing: the new month starts afresh.
    if (recorded && action === "exceed" && month === monthOf(now))
      await stopWork(env, db, ref, month, state?.liftedAt ?? null, spent[i]!, now);
  }
  return crossings;
}

function stateKey(ref: BudgetRef, month: string): SQL {
  return and(eq(budgetStates.scope, ref.scope), eq(budgetStates.scopeId, ref.id), eq(budgetStates.month, month))!;
}

/** The budget's own row has `column` set this month. */
const stateHas = (ref: BudgetRef, month: string, column: typeof budgetStates.warnedAt | typeof budgetStates.exceededAt) =>
  sql`EXISTS (SELECT 1 FROM ${budgetStates} WHERE ${stateKey(ref, month)} AND ${column} IS NOT NULL)`;

/** Records a crossing; true when this call's conditional write set it (the one that acts on it). */
async function recordCrossing(
  db: Db,
  ref: BudgetRef,
  month: string,
  spent: Spent,
  warnRatio: number,
  action: Exclude<BudgetAction, "none">,
  now: Date,
): Promise<boolean> {
  const at = now.toISOString();
  const subject = budgetSubject(ref.scope, ref.id);
  const payload = {
    scope: ref.scope,
    id: ref.id,
    month,
    limit: ref.limit,
    spent: { usd: spent.usd ?? "unknown", tokens: spent.tokens ?? "unknown" },
    ratio: budgetRatio(spent, ref.limit),
    warn_ratio: warnRatio,
  };
  const event = (type: "budget.warning" | "budget.exceeded") => ({ type, subject, payload, dedupeKey: `${type}:${subject}:${month}` });
  const target = [budgetStates.scope, budgetStates.scopeId, budgetStates.month];
  // The events first, each guarded by the state the write below changes (src/lib/guarded-insert.ts).
  const warning = appendEventWhere(db, event("budget.warning"), now, sql`NOT ${stateHas(ref, month, budgetStates.warnedAt)}`);
  if (action === "warn") {
    const [, written] = await db.batch([
      warning,
      db
        .insert(budgetStates)
        .values({ scope: ref.scope, scopeId: ref.id, month, warnedAt: at })
        .onConflictDoUpdate({ target, set: { warnedAt: at }, setWhere: isNull(budgetStates.warnedAt) })
        .returning({ month: budgetStates.month }),
    ]);
    stateSeen({ scope: ref.scope, scopeId: ref.id, month, warnedAt: at, exceededAt: null });
    return written.length > 0;
  }
  const [, , written] = await db.batch([
    warning,
    appendEventWhere(db, event("budget.exceeded"), now, sql`NOT ${stateHas(ref, month, budgetStates.exceededAt)}`),
    db
      .insert(budgetStates)
      .values({ scope: ref.scope, scopeId: ref.id, month, warnedAt: at, exceededAt: at })
      .onConflictDoUpdate({
        target,
        set: { warnedAt: sql`COALESCE(${budgetStates.warnedAt}, excluded.warned_at)`, exceededAt: at },
        setWhere: isNull(budgetStates.exceededAt),
      })
      .returning({ month: budgetStates.month }),
  ]);
  stateSeen({ scope: ref.scope, scopeId: ref.id, month, warnedAt: at, exceededAt: at });
  return written.length > 0;
}

/**
 * The work stops: an employee is paused (`paused_reason: budget`) unless a manager lifted its budget
 * this month; a project's or the company's jobs are held in every inbox (the hold keys come from
 * `budget_states`). An inbox a failed sync missed is brought in line by the `budgets` tick.
 */
async function stopWork(env: SpendEnv, db: Db, ref: BudgetRef, month: string, liftedAt: string | null, spent: Spent, now: Date) {
  if (ref.scope === "employee") {
    if (liftedAt) return;
    await pauseBudgetEmployee(env, db, ref.id, month, spent, now);
    return;
  }
  try {
    await syncHoldsEverywhere(env, db, now);
  } catch (err) {
    console.warn(`budgets: holding ${budgetSubject(ref.scope, ref.id)} failed; the budgets tick syncs the inboxes`, err);
  }
}

/** Pauses an employee for its budget; one that is gone or retired has nothing to pause. */
export async function pauseBudgetEmployee(env: SpendEnv, db: Db, id: string, month: string, spent: Spent, now: Date): Promise<boolean> {
  try {
    const out = await pauseEmployee(env, db, id, {
      actor: "budget",
      reason: "budget",
      now,
      detail: { month, spent: { usd: spent.usd ?? "unknown", tokens: spent.tokens ?? "unknown" } },
    });
    return out.changed;
  } catch (err) {
    if (err instanceof AppError && (err.code === "not_found" || err.code === "employee_retired")) return false;
    throw err;
  }
}

// ---------------------------------------------------------------- after a job

/**
 * Runs once a completed job's notice (with its ledger row and the month's totals) is in D1, at least
 * once per job (`callOwner` in src/workers/runner-inbox.ts). In the usual case it reads nothing from
 * D1: the totals come from the delivery that carried the job (src/jobs/spend-totals.ts), the config
 * from its cache, and a budget below its warning ratio, or one whose crossing this isolate has seen
 * recorded, has nothing to do. Otherwise the budgets that may cross are checked against D1
 * (`evaluateBudgets`). A job whose delivery another isolate made reads its ledger row and totals.
 */
export async function checkBudgetsAfterJob(env: SpendEnv, end: JobEnd): Promise<Crossing[]> {
  if (end.status !== "completed") return [];
  const delivered = deliveredSpend(end.job_id);
  if (!delivered && !costFiguresOf(end.result)) return [];
  const db = getDb(env.DB);
  const config = await readSectionCached(db, budgetsConfig);
  if (!anyBudget(config)) return [];
  const job =
    delivered ??
    (await db
      .select({ employeeId: costEntries.employeeId, projectId: costEntries.projectId, month: costEntries.month })
      .from(costEntries)
      .where(eq(costEntries.jobId, end.job_id))
      .get());
  if (!job) return [];
  const refs = budgetsOfJob(config, job.employeeId, job.projectId);
  if (refs.length === 0) return [];
  const known = delivered ? refs.map((r) => delivered.total(r.scope, r.id)) : [];
  const spent =
    known.length > 0 && known.every((t) => t !== undefined) ? known.map(spentOf) : (await readBudgetMonth(db, refs, job.month)).spent;
  const candidates = refs.filter((r, i) => mayCross(r, job.month, spent[i]!, config.warn_ratio));
  if (candidates.length === 0) return [];
  return evaluateBudgets(env, db, config.warn_ratio, candidates, job.month, (await loadClock(env)).now());
}
