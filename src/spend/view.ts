import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { budgetStates, employees, type BudgetScope, type BudgetStateRow } from "../db/schema";
import type { Env } from "../env";
import { monthOf, syncHoldsEverywhere } from "../jobs/holds";
import { readSection } from "../lib/config";
import { AppError } from "../lib/errors";
import { appendEventWhere } from "../lib/guarded-insert";
import { resumeEmployee } from "../tasks/employee-lifecycle";
import { budgetRatio, budgetStateOf, budgetSubject, configuredBudgets, limitOf, readBudgetMonth, type BudgetState } from "./budgets";
import { budgetsConfig, type BudgetLimit } from "./config";

/** A budget as `GET /v1/budgets` shows it. Unknown spend is `"unknown"`, never 0. */
export interface BudgetView {
  scope: BudgetScope;
  id: string;
  month: string;
  /** Null for a budget no longer configured whose stop is still in force this month (a manager lifts it). */
  limit: BudgetLimit | null;
  spent: { usd: number | "unknown"; tokens: number | "unknown" };
  ratio: number | null;
  state: BudgetState;
  warned_at: string | null;
  exceeded_at: string | null;
  lifted_at: string | null;
  lifted_by: string | null;
}

/**
 * Every configured budget with this month's spend and state, and any budget no longer configured
 * whose stop is still in force this month (so a hold never hides).
 */
export async function budgetsView(db: Db, now: Date): Promise<{ month: string; warn_ratio: number; budgets: BudgetView[] }> {
  const config = await readSection(db, budgetsConfig);
  const month = monthOf(now);
  const configured = configuredBudgets(config);
  const { spent, states } = await readBudgetMonth(db, configured, month);
  const known = new Set(configured.map((r) => budgetSubject(r.scope, r.id)));
  const orphans = [...states.values()]
    .filter((s) => s.exceededAt && !s.liftedAt && !known.has(budgetSubject(s.scope, s.scopeId)))
    .map((s) => ({ scope: s.scope, id: s.scopeId, limit: {} }));
  const orphanSpent = orphans.length > 0 ? (await readBudgetMonth(db, orphans, month)).spent : [];
  return {
    month,
    warn_ratio: config.warn_ratio,
    budgets: [
      ...configured.map((r, i) => view(r.scope, r.id, month, r.limit, spent[i]!, states.get(budgetSubject(r.scope, r.id)))),
      ...orphans.map((r, i) => view(r.scope, r.id, month, null, orphanSpent[i]!, states.get(budgetSubject(r.scope, r.id)))),
    ],
  };
}

function view(
  scope: BudgetScope,
  id: string,
  month: string,
  limit: BudgetLimit | null,
  spent: { usd: number | null; tokens: number | null },
  state: BudgetStateRow | undefined,
): BudgetView {
  return {
    scope,
    id,
    month,
    limit,
    spent: { usd: spent.usd ?? "unknown", tokens: spent.tokens ?? "unknown" },
    ratio: limit ? budgetRatio(spent, limit) : null,
    state: budgetStateOf(state),
    warned_at: state?.warnedAt ?? null,
    exceeded_at: state?.exceededAt ?? null,
    lifted_at: state?.liftedAt ?? null,
    lifted_by: state?.liftedBy ?? null,
  };
}

/**
 * A manager lifts a budget's stop for the rest of this month: `lifted_at`/`lifted_by` and a
 * `budget.lifted` event in one conditional batch (only the first lift records), then the work goes
 * on: the project's or the company's hold leaves the inboxes; an employee paused for its budget is
 * resumed. Only an exceeded budget can be lifted (`409 conflict` otherwise); lifting one already
 * lifted changes nothing.
 */
export async function liftBudget(
  env: Pick<Env, "DB" | "RUNNER_INBOX">,
  db: Db,
  scope: BudgetScope,
  id: string,
  actor: string,
  now: Date,
): Promise<{ budget: BudgetView; changed: boolean; inboxes_synced: boolean }> {
  if (scope === "company" && id !== "company") throw new AppError("not_found", "The company's budget is /v1/budgets/company/company");
  const month = monthOf(now);
  const at = now.toISOString();
  const key = and(eq(budgetStates.scope, scope), eq(budgetStates.scopeId, id), eq(budgetStates.month, month));
  const liftable = and(key, isNotNull(budgetStates.exceededAt), isNull(budgetStates.liftedAt));
  const subject = budgetSubject(scope, id);
  const [, lifted] = await db.batch([
    appendEventWhere(
      db,
      { type: "budget.lifted", subject, payload: { scope, id, month, by: actor }, dedupeKey: `budget.lifted:${subject}:${month}` },
      now,
      sql`EXISTS (SELECT 1 FROM ${budgetStates} WHERE ${liftable})`,
    ),
    db.update(budgetStates).set({ liftedAt: at, liftedBy: actor }).where(liftable).returning(),
  ]);
  const row = lifted[0] ?? (await db.select().from(budgetStates).where(key).get());
  if (!row?.exceededAt) throw new AppError("conflict", `The ${subject} budget is not exceeded in ${month}: there is nothing to lift`);
  let synced = true;
  if (lifted[0]) {
    if (scope === "employee") {
      const employee = await db
        .select({ status: employees.status, reason: employees.pausedReason })
        .from(employees)
        .where(eq(employees.id, id))
        .get();
      if (employee?.status === "paused" && employee.reason === "budget")
        synced = (await resumeEmployee(env, db, id, { actor, now })).inboxes_synced;
    } else {
      try {
        await syncHoldsEverywhere(env, db, now);
      } catch (err) {
        console.warn(`budgets: releasing ${subject} failed; the budgets tick syncs the inboxes`, err);
        synced = false;
      }
    }
  }
  const limit = limitOf(await readSection(db, budgetsConfig), scope, id) ?? null;
  const { spent, states } = await readBudgetMonth(db, [{ scope, id, limit: limit ?? {} }], month);
  return {
    budget: view(scope, id, month, limit, spent[0]!, states.get(subject) ?? row),
    changed: lifted.length > 0,
    inboxes_synced: synced,
  };
}
