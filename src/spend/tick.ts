import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { budgetStates, employees } from "../db/schema";
import type { Env } from "../env";
import { monthOf, syncHoldsEverywhere } from "../jobs/holds";
import { readSection } from "../lib/config";
import { appendEventWhere } from "../lib/guarded-insert";
import { configuredBudgets, evaluateBudgets, limitOf, pauseBudgetEmployee, readBudgetMonth } from "./budgets";
import { budgetsConfig } from "./config";

type SpendEnv = Pick<Env, "DB" | "RUNNER_INBOX" | "ENVIRONMENT">;

/**
 * The `budgets` tick, every minute: checks every configured budget against the month's spend (a
 * crossing a job's check missed is recorded here), pauses an employee whose recorded excess was never
 * acted on (its checker stopped in between), resumes employees paused for a budget of a month that
 * is over, and syncs every inbox's holds with D1 (repairing an inbox a failed sync missed).
 */
export async function budgetsTick(env: SpendEnv, now: Date): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const config = await readSection(db, budgetsConfig);
  const month = monthOf(now);
  const crossings = await evaluateBudgets(env, db, config.warn_ratio, configuredBudgets(config), month, now);

  // An excess recorded and not lifted, for an employee still at work: the checker that recorded it
  // stopped before the pause. One that is no longer configured is left alone.
  const missed = await db
    .select({ id: budgetStates.scopeId })
    .from(budgetStates)
    .innerJoin(employees, eq(employees.id, budgetStates.scopeId))
    .where(
      and(
        eq(budgetStates.scope, "employee"),
        eq(budgetStates.month, month),
        isNotNull(budgetStates.exceededAt),
        isNull(budgetStates.liftedAt),
        eq(employees.status, "active"),
      ),
    );
  let paused = 0;
  for (const { id } of missed) {
    if (!limitOf(config, "employee", id)) continue;
    const { spent } = await readBudgetMonth(db, [{ scope: "employee", id, limit: {} }], month);
    if (await pauseBudgetEmployee(env, db, id, month, spent[0]!, now)) paused++;
  }

  const resumed = await resumeNewMonth(db, month, now);
  const holds = await syncHoldsEverywhere(env, db, now);
  return {
    budgets: configuredBudgets(config).length,
    warned: crossings.filter((c) => c.recorded && c.action === "warn").length,
    exceeded: crossings.filter((c) => c.recorded && c.action === "exceed").length,
    paused,
    resumed,
    hold_keys: holds.keys.length,
    held: holds.held,
    released: holds.released,
  };
}

/**
 * Employees paused for a budget whose stop is not in force this month (the month it was reached is
 * over), resumed by `budget`: each one conditional write with its event, so a manager's pause or
 * resume meanwhile wins. Unlike a manager's resume this lifts nothing: the new month's budget can
 * pause it again. The holds follow with the tick's sync.
 */
async function resumeNewMonth(db: Db, month: string, now: Date): Promise<number> {
  const at = now.toISOString();
  const stopInForce = sql`EXISTS (SELECT 1 FROM ${budgetStates} WHERE ${budgetStates.scope} = 'employee' AND ${budgetStates.scopeId} = ${employees.id}
    AND ${budgetStates.month} = ${month} AND ${budgetStates.exceededAt} IS NOT NULL AND ${budgetStates.liftedAt} IS NULL)`;
  const candidates = await db
    .select({ id: employees.id })
    .from(employees)
    .where(and(eq(employees.status, "paused"), eq(employees.pausedReason, "budget"), sql`NOT ${stopInForce}`));
  let resumed = 0;
  for (const { id } of candidates) {
    const pausedForBudget = and(
      eq(employees.id, id),
      eq(employees.status, "paused"),
      eq(employees.pausedReason, "budget"),
      sql`NOT ${stopInForce}`,
    );
    const [, updated] = await db.batch([
      appendEventWhere(
        db,
        { type: "employee.resumed", subject: id, payload: { employee_id: id, by: "budget", was: "budget", reason: "new_month", month } },
        now,
        sql`EXISTS (SELECT 1 FROM ${employees} WHERE ${pausedForBudget})`,
      ),
      db
        .update(employees)
        .set({ status: "active", pausedReason: null, statusChangedAt: at, statusChangedBy: "budget", updatedAt: at })
        .where(pausedForBudget)
        .returning({ id: employees.id }),
    ]);
    if (updated.length > 0) resumed++;
  }
  return resumed;
}
