import { asc, eq } from "drizzle-orm";
import { ZodError } from "zod";
import { getDb, type Db } from "../db/client";
import { employees, routines, tasks, type EmployeeStatus, type RoutineRow, type TaskStatus } from "../db/schema";
import type { Env } from "../env";
import { matrixAdvice } from "../eval/advice";
import { AppError } from "../lib/errors";
import { goalBody, openGoal } from "../team/goal-request";
import type { MatrixAdvice } from "../team/goals";
import { dueSlot, missedSlots } from "./schedule";
import { claimAndSkip, claimToFire, recordFired, recordRefused, type RoutineSkipReason } from "./store";

/** At most this many due routines are handled per tick; the rest stay due and go first next time. */
const HANDLED_PER_TICK = 50;

interface Candidate {
  routine: RoutineRow;
  /** Null when the employee row is missing (openGoal then refuses the goal). */
  employeeStatus: EmployeeStatus | null;
  /** The status of the goal the last fire opened, if any. */
  lastTaskStatus: TaskStatus | null;
}

type Outcome = { kind: "fired" } | { kind: "skipped"; reason: RoutineSkipReason } | { kind: "lost" };

// A type, not an interface: a tick's summary must be assignable to Record<string, unknown>.
export type RoutinesTickSummary = {
  /** Enabled routines looked at. */
  routines: number;
  /** Of them, with a slot to handle. */
  due: number;
  fired: number;
  skipped: number;
  /** Slots another tick claimed first (it records their outcome). */
  lost: number;
  /** Due, but past this tick's bound: the next tick takes them. */
  deferred: number;
  by_reason: Partial<Record<RoutineSkipReason, number>>;
};

/**
 * The `routines` tick (every minute). For each enabled routine whose newest slot at or before `now`
 * is newer than its `last_slot`: claim that slot with one conditional write (so a slot is handled
 * once however many ticks see it, concurrently or after a restart, and slots missed while down
 * collapse into the newest), then, if this tick claimed it:
 *   - employee paused or retired → `routine.skipped` (`employee_paused`, `employee_retired`);
 *   - its last goal still open → `routine.skipped` (`previous_goal_open`): the wake merges into the
 *     open goal, no goal opened and no runner job, so it costs no model call;
 *   - else the goal opens from the template → `routine.fired`; a refused goal → `routine.skipped`
 *     (`goal_refused`, with the error's code).
 * One routine's failure never stops the others.
 */
export async function routinesTick(env: Env, now: Date, limit = HANDLED_PER_TICK): Promise<RoutinesTickSummary> {
  const db = getDb(env.DB);
  const candidates: Candidate[] = await db
    .select({ routine: routines, employeeStatus: employees.status, lastTaskStatus: tasks.status })
    .from(routines)
    .leftJoin(employees, eq(employees.id, routines.employeeId))
    .leftJoin(tasks, eq(tasks.id, routines.lastTaskId))
    .where(eq(routines.enabled, true))
    // The longest-waiting first (NULL sorts first), so a deferred routine is not deferred again.
    .orderBy(asc(routines.lastSlot), asc(routines.id))
    .all();
  const summary: RoutinesTickSummary = { routines: candidates.length, due: 0, fired: 0, skipped: 0, lost: 0, deferred: 0, by_reason: {} };
  let advice: Promise<MatrixAdvice | undefined> | undefined;
  const adviceOnce = () => (advice ??= matrixAdvice(db, now));
  let handled = 0;
  for (const c of candidates) {
    const slot = dueSlot(c.routine.schedule, new Date(c.routine.createdAt), c.routine.lastSlot, now);
    if (slot === null) continue;
    summary.due++;
    if (handled >= limit) {
      summary.deferred++;
      continue;
    }
    handled++;
    let outcome: Outcome;
    try {
      outcome = await handleSlot(env, db, c, slot, now, adviceOnce);
    } catch (err) {
      // A D1 hiccup on one routine: its slot stays unclaimed (or its outcome unrecorded); the next tick retries what it can.
      console.error(`routines: routine ${c.routine.id} slot ${slot} failed`, err);
      continue;
    }
    if (outcome.kind === "fired") summary.fired++;
    else if (outcome.kind === "lost") summary.lost++;
    else {
      summary.skipped++;
      summary.by_reason[outcome.reason] = (summary.by_reason[outcome.reason] ?? 0) + 1;
    }
  }
  return summary;
}

async function handleSlot(
  env: Env,
  db: Db,
  c: Candidate,
  slot: string,
  now: Date,
  advice: () => Promise<MatrixAdvice | undefined>,
): Promise<Outcome> {
  const r = c.routine;
  const base = { routine_id: r.id, employee_id: r.employeeId, slot };
  const skip = async (reason: RoutineSkipReason, extra: Record<string, unknown> = {}): Promise<Outcome> =>
    (await claimAndSkip(db, r, slot, { ...base, reason, ...extra }, now)) ? { kind: "skipped", reason } : { kind: "lost" };

  if (c.employeeStatus === "paused") return skip("employee_paused");
  if (c.employeeStatus === "retired") return skip("employee_retired");
  // Duplicate wakes merge: the open goal already covers this work (no new goal, no job, no model call).
  if (r.lastTaskId && c.lastTaskStatus === "assigned") return skip("previous_goal_open", { task_id: r.lastTaskId });

  if (!(await claimToFire(db, r, slot))) return { kind: "lost" };
  const missed = missedSlots(r.schedule, new Date(r.createdAt), r.lastSlot, slot);
  let opened: { task_id: string; assigned_to: string };
  try {
    // Parsed again: a template stored under an older goal body may no longer be a valid one.
    const body = goalBody.parse(r.template);
    opened = await openGoal(env, db, r.employeeId, body, `routine:${r.id}`, now, await advice());
  } catch (err) {
    const code = err instanceof AppError ? err.code : err instanceof ZodError ? "validation_failed" : "internal_error";
    if (code === "internal_error") console.error(`routines: goal of routine ${r.id} failed`, err);
    await recordRefused(
      db,
      r,
      slot,
      { ...base, reason: "goal_refused", error_code: code, ...(err instanceof AppError ? { detail: err.detail } : {}) },
      now,
    );
    return { kind: "skipped", reason: "goal_refused" };
  }
  await recordFired(
    db,
    r,
    slot,
    opened.task_id,
    { ...base, task_id: opened.task_id, assigned_to: opened.assigned_to, ...(missed > 0 ? { missed_slots: missed } : {}) },
    now,
  );
  return { kind: "fired" };
}
