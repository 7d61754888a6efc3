import { and, eq, inArray, isNotNull, isNull } from "drizzle-orm";
import type { Db } from "../db/client";
import { budgetStates, employees } from "../db/schema";
import { getRunnerInbox } from "../durable-objects/runner-inbox-rpc";
import type { JobError } from "./payloads";
import { everyInbox } from "./inbox-pools";
import { inboxLayout, type InboxEnv } from "./inbox-routing";

/** The UTC month of `now`, `YYYY-MM`: the period of a monthly budget. */
export function monthOf(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/**
 * The hold keys D1 says are in force now: every paused employee (`employee:<id>`) and retired one
 * (`retired:<id>`: its untaken jobs end rather than wait), and
 * each project or the company whose monthly budget stopped work this month and was not lifted
 * (`project:<id>`, `company`). D1 is the truth; the inboxes mirror it (`syncHoldsEverywhere`).
 */
export async function holdKeysInForce(db: Db, now: Date): Promise<string[]> {
  const [stopped, overBudget] = await Promise.all([
    db
      .select({ id: employees.id, status: employees.status })
      .from(employees)
      .where(inArray(employees.status, ["paused", "retired"])),
    db
      .select({ scope: budgetStates.scope, scopeId: budgetStates.scopeId })
      .from(budgetStates)
      .where(and(eq(budgetStates.month, monthOf(now)), isNotNull(budgetStates.exceededAt), isNull(budgetStates.liftedAt))),
  ]);
  const keys = new Set(stopped.map((r) => `${r.status === "retired" ? "retired" : "employee"}:${r.id}`));
  for (const b of overBudget) {
    // An employee over budget is paused through its row (above), so a manager's resume lifts it.
    if (b.scope === "company") keys.add("company");
    else if (b.scope === "project") keys.add(`project:${b.scopeId}`);
  }
  return [...keys].sort();
}

/**
 * Brings every inbox's holds in line with D1. Called right after a change of them (a pause, a
 * resume, a budget crossing) and by the `budgets` tick, which repairs an inbox a failed call missed.
 */
export async function syncHoldsEverywhere(env: InboxEnv, db: Db, now: Date): Promise<{ keys: string[]; held: number; released: number }> {
  const [keys, layout] = await Promise.all([holdKeysInForce(db, now), inboxLayout(env)]);
  const parts = await Promise.all(everyInbox(layout).map((inbox) => getRunnerInbox(env, inbox).syncHolds({ keys, now: now.getTime() })));
  return { keys, held: parts.reduce((n, p) => n + p.held, 0), released: parts.reduce((n, p) => n + p.released, 0) };
}

/** A retired employee's untaken jobs (queued or held), ended `dead` with `error` in every inbox. */
export async function withdrawEmployeeEverywhere(env: InboxEnv, employeeId: string, error: JobError, now: Date): Promise<string[]> {
  const layout = await inboxLayout(env);
  const parts = await Promise.all(
    everyInbox(layout).map((inbox) => getRunnerInbox(env, inbox).withdrawEmployee({ employeeId, error, now: now.getTime() })),
  );
  return parts.flatMap((p) => p.withdrawn);
}
