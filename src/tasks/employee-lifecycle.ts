import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { budgetStates, employees, routines, tasks, type EmployeeRow, type PauseReason } from "../db/schema";
import type { Env } from "../env";
import { AppError, notFound } from "../lib/errors";
import { appendEventWhere } from "../lib/guarded-insert";
import { monthOf, syncHoldsEverywhere, withdrawEmployeeEverywhere } from "../jobs/holds";
import { findEmployee } from "./employees";
import { settleTask } from "./settle";

type LifecycleEnv = Pick<Env, "DB" | "RUNNER_INBOX">;

export interface LifecycleOutcome {
  row: EmployeeRow;
  /** False when the employee was already in the state asked for (repeating a pause is a no-op). */
  changed: boolean;
  /** Whether every inbox took the new holds now; when not, the `budgets` tick brings them in line within a minute. */
  inboxes_synced: boolean;
}

/**
 * Pauses an employee: no job of its is leased from now on (queued ones are held in the inboxes and
 * keep their place), work already leased finishes, its routines do not fire. `budget` is the
 * automatic pause at 100 % of its monthly budget. One conditional write with its event.
 */
export async function pauseEmployee(
  env: LifecycleEnv,
  db: Db,
  id: string,
  opts: { actor: string; reason: PauseReason; now: Date; detail?: Record<string, unknown> },
): Promise<LifecycleOutcome> {
  const row = await requireEmployee(db, id);
  if (row.status === "retired") throw retired(id);
  if (row.status === "paused") return { row, changed: false, inboxes_synced: true };
  const at = opts.now.toISOString();
  const active = and(eq(employees.id, id), eq(employees.status, "active"));
  const [, updated] = await db.batch([
    appendEventWhere(
      db,
      { type: "employee.paused", subject: id, payload: { employee_id: id, reason: opts.reason, by: opts.actor, ...(opts.detail ?? {}) } },
      opts.now,
      sql`EXISTS (SELECT 1 FROM ${employees} WHERE ${active})`,
    ),
    db
      .update(employees)
      .set({ status: "paused", pausedReason: opts.reason, statusChangedAt: at, statusChangedBy: opts.actor, updatedAt: at })
      .where(active)
      .returning(),
  ]);
  return settleHolds(env, db, id, updated[0], opts.now);
}

/**
 * Resumes a paused employee: its held jobs go back to the queue in their order. Resuming a budget
 * pause is a manager's lift for the rest of the month: the budget does not pause it again until the
 * next month (docs/spend.md).
 */
export async function resumeEmployee(env: LifecycleEnv, db: Db, id: string, opts: { actor: string; now: Date }): Promise<LifecycleOutcome> {
  const row = await requireEmployee(db, id);
  if (row.status === "retired") throw retired(id);
  if (row.status === "active") return { row, changed: false, inboxes_synced: true };
  const at = opts.now.toISOString();
  const paused = and(eq(employees.id, id), eq(employees.status, "paused"));
  const stillPaused = sql`EXISTS (SELECT 1 FROM ${employees} WHERE ${paused})`;
  const lift =
    row.pausedReason === "budget"
      ? [
          db
            .insert(budgetStates)
            .values({ scope: "employee", scopeId: id, month: monthOf(opts.now), liftedAt: at, liftedBy: opts.actor })
            .onConflictDoUpdate({
              target: [budgetStates.scope, budgetStates.scopeId, budgetStates.month],
              set: { liftedAt: at, liftedBy: opts.actor },
            }),
        ]
      : [];
  const results = await db.batch([
    appendEventWhere(
      db,
      { type: "employee.resumed", subject: id, payload: { employee_id: id, by: opts.actor, was: row.pausedReason } },
      opts.now,
      stillPaused,
    ),
    ...lift,
    db
      .update(employees)
      .set({ status: "active", pausedReason: null, statusChangedAt: at, statusChangedBy: opts.actor, updatedAt: at })
      .where(paused)
      .returning(),
  ] as const);
  const updated = results[results.length - 1] as EmployeeRow[];
  return settleHolds(env, db, id, updated[0], opts.now);
}

/**
 * Retires an employee for good. Its history stays (tasks, rounds, ledger, conversations, cost); its
 * jobs no runner took end `dead` (`employee_retired`) and their owners are told; leased work finishes;
 * its open tasks are settled `needs_human` (`blocked_needs_decision`) so a person hands them on.
 */
export async function retireEmployee(
  env: LifecycleEnv,
  db: Db,
  id: string,
  opts: {
    actor: string;
    now: Date;
    /**
     * Ends the live rounds of the tasks it settled (the team feature's `cancelRoundsOfSettledTasks`,
     * passed in: tasks does not import team), before their jobs end, so no round goes on to its next stage.
     */
    cancelRounds?: (taskIds: string[]) => Promise<void>;
  },
): Promise<LifecycleOutcome & { withdrawn_jobs: string[]; handed_back_tasks: string[] }> {
  const row = await requireEmployee(db, id);
  if (row.status === "retired") return { row, changed: false, inboxes_synced: true, withdrawn_jobs: [], handed_back_tasks: [] };
  const at = opts.now.toISOString();
  const notRetired = and(eq(employees.id, id), sql`${employees.status} <> 'retired'`);
  const [, updated] = await db.batch([
    appendEventWhere(
      db,
      { type: "employee.retired", subject: id, payload: { employee_id: id, by: opts.actor, was: row.status } },
      opts.now,
      sql`EXISTS (SELECT 1 FROM ${employees} WHERE ${notRetired})`,
    ),
    db
      .update(employees)
      .set({ status: "retired", pausedReason: null, statusChangedAt: at, statusChangedBy: opts.actor, updatedAt: at })
      .where(notRetired)
      .returning(),
    // Its routines stop here rather than log a skip on every slot for good; they stay listed, and
    // enabling one again is refused (a retired employee takes no new work).
    db
      .update(routines)
      .set({ enabled: false, revision: sql`${routines.revision} + 1`, updatedAt: at })
      .where(and(eq(routines.employeeId, id), eq(routines.enabled, true))),
  ]);
  if (!updated[0]) return { row: await requireEmployee(db, id), changed: false, inboxes_synced: true, withdrawn_jobs: [], handed_back_tasks: [] };
  // Its open tasks first: the owners told of the jobs ended below then find their task settled and start nothing new.
  const open = await db
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.assignedTo, id), eq(tasks.status, "assigned")));
  const handedBack: string[] = [];
  for (const t of open) {
    const settled = await settleTask(db, t.id, { status: "needs_human", pause_class: "blocked_needs_decision" }, opts.actor, opts.now, [
      { type: "task.handed_back", subject: t.id, payload: { task_id: t.id, employee_id: id, reason: "employee_retired" } },
    ]).catch((err: unknown) => {
      // Settled meanwhile by its own loop: nothing to hand back.
      if (err instanceof AppError && err.code === "already_settled") return null;
      throw err;
    });
    if (settled?.changed) handedBack.push(t.id);
  }
  if (opts.cancelRounds && handedBack.length > 0) await opts.cancelRounds(handedBack);
  // Before the holds reach the inboxes (which end these jobs too, and any that arrive later), so
  // this call can name the jobs it ended.
  const withdrawn = await withdrawEmployeeEverywhere(
    env,
    id,
    { code: "employee_retired", message: `employee ${id} was retired before a runner took this job` },
    opts.now,
  ).catch((err: unknown) => {
    console.warn(`retire ${id}: withdrawing its jobs failed; the inbox holds end them`, err);
    return [] as string[];
  });
  const outcome = await settleHolds(env, db, id, updated[0], opts.now);
  return { ...outcome, withdrawn_jobs: withdrawn, handed_back_tasks: handedBack };
}

async function requireEmployee(db: Db, id: string): Promise<EmployeeRow> {
  const row = await findEmployee(db, id);
  if (!row) throw notFound(`employee ${id}`);
  return row;
}

function retired(id: string) {
  return new AppError("employee_retired", `employee ${id} is retired; a retired employee is not paused or resumed`);
}

/** After a status write: the row as it is now, and the inboxes told (a failure is repaired by the tick). */
async function settleHolds(env: LifecycleEnv, db: Db, id: string, updated: EmployeeRow | undefined, now: Date): Promise<LifecycleOutcome> {
  // Lost a race with another lifecycle call: answer with what the winner left.
  if (!updated) return { row: await requireEmployee(db, id), changed: false, inboxes_synced: true };
  let synced = true;
  try {
    await syncHoldsEverywhere(env, db, now);
  } catch (err) {
    console.warn(`holds: inbox sync after ${updated.status} of ${id} failed; the budgets tick repairs it`, err);
    synced = false;
  }
  return { row: updated, changed: true, inboxes_synced: synced };
}
