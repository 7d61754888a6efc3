import { and, asc, desc, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { events, routines, type RoutineRow, type RoutineSchedule } from "../db/schema";
import { appendEvent } from "../lib/events";
import { AppError, notFound } from "../lib/errors";
import { appendEventWhere } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { label } from "../lib/validation";
import { employeeId, findEmployee } from "../tasks/employees";
import { goalBody } from "../team/goal-request";
import { latestSlot, scheduleInput, upcomingSlot } from "./schedule";

/**
 * Routines: scheduled work of an employee (docs/routines.md). Their rows, the API's bodies and
 * views, and the claim the `routines` tick makes on a slot.
 */

/** Why a claimed slot opened no goal (the `reason` of `routine.skipped`). */
export const ROUTINE_SKIP_REASONS = ["employee_paused", "employee_retired", "previous_goal_open", "goal_refused"] as const;
export type RoutineSkipReason = (typeof ROUTINE_SKIP_REASONS)[number];

export const routineId = z.string().regex(/^rtn_[0-9a-f]{16}$/, "a routine id (rtn_ and 16 hex digits)");

/** `POST /v1/routines`. The template is a goal body, as `POST /v1/employees/:id/goals` takes it. */
export const routineBody = z.strictObject({
  employee_id: employeeId,
  name: label(200),
  schedule: scheduleInput,
  template: goalBody,
  enabled: z.boolean().default(true),
});
export type RoutineBody = z.infer<typeof routineBody>;

/** `PATCH /v1/routines/:id`: any of the fields; `revision`, when given, must be the current one. */
export const routinePatch = z
  .strictObject({
    name: label(200).optional(),
    schedule: scheduleInput.optional(),
    template: goalBody.optional(),
    enabled: z.boolean().optional(),
    revision: z.number().int().min(1).optional(),
  })
  .refine((p) => p.name !== undefined || p.schedule !== undefined || p.template !== undefined || p.enabled !== undefined, {
    message: "nothing to change: give name, schedule, template or enabled",
  });
export type RoutinePatch = z.infer<typeof routinePatch>;

export const routineListQuery = z.object({
  employee_id: employeeId.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: routineId.optional(),
});

/** The anchor of an `every_minutes` schedule: the routine's creation. */
const anchorOf = (r: Pick<RoutineRow, "createdAt">) => new Date(r.createdAt);

export interface RoutineOutcome {
  slot: string;
  outcome: "fired" | "skipped";
  reason: RoutineSkipReason | null;
  task_id: string | null;
  error_code: string | null;
  at: string;
}

function outcomeOf(type: string, payload: Record<string, unknown>, at: string): RoutineOutcome {
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return {
    slot: String(payload.slot ?? ""),
    outcome: type === "routine.fired" ? "fired" : "skipped",
    reason: type === "routine.fired" ? null : ((text(payload.reason) as RoutineSkipReason | null) ?? null),
    task_id: text(payload.task_id),
    error_code: text(payload.error_code),
    at,
  };
}

export function routineView(row: RoutineRow, now: Date, lastOutcome: RoutineOutcome | null) {
  return {
    routine_id: row.id,
    employee_id: row.employeeId,
    name: row.name,
    schedule: row.schedule,
    template: row.template,
    enabled: row.enabled,
    /** The slot the tick handles next (a past one while it is due and no tick has run); null when disabled. */
    next_slot: row.enabled ? upcomingSlot(row.schedule, anchorOf(row), row.lastSlot, now) : null,
    last_slot: row.lastSlot,
    last_task_id: row.lastTaskId,
    last_fired_at: row.lastFiredAt,
    last_outcome: lastOutcome,
    revision: row.revision,
    created_by: row.createdBy,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
export type RoutineView = ReturnType<typeof routineView>;

const OUTCOME_TYPES = sql`('routine.fired', 'routine.skipped')`;

/** The newest outcome event of the routine in the row, as one JSON object (a correlated subquery). */
const lastOutcomeJson = sql<string | null>`(SELECT json_object('type', e.type, 'payload', json(e.payload), 'at', e.created_at)
  FROM ${events} e WHERE e.subject = ${routines.id} AND e.type IN ${OUTCOME_TYPES} ORDER BY e.id DESC LIMIT 1)`;

function parseOutcome(json: string | null): RoutineOutcome | null {
  if (!json) return null;
  const e = JSON.parse(json) as { type: string; payload: Record<string, unknown>; at: string };
  return outcomeOf(e.type, e.payload, e.at);
}

export function findRoutine(db: Db, id: string) {
  return db.select().from(routines).where(eq(routines.id, id)).get();
}

async function requireRoutine(db: Db, id: string): Promise<RoutineRow> {
  const row = await findRoutine(db, id);
  if (!row) throw notFound(`routine ${id}`);
  return row;
}

/** Routines by id, optionally of one employee, each with its last outcome. */
export async function listRoutines(db: Db, q: z.infer<typeof routineListQuery>, now: Date) {
  const rows = await db
    .select({ row: routines, last: lastOutcomeJson })
    .from(routines)
    .where(and(q.employee_id ? eq(routines.employeeId, q.employee_id) : undefined, q.cursor ? gt(routines.id, q.cursor) : undefined))
    .orderBy(asc(routines.id))
    .limit(q.limit + 1)
    .all();
  const page = rows.slice(0, q.limit);
  return {
    routines: page.map((r) => routineView(r.row, now, parseOutcome(r.last))),
    next_cursor: rows.length > q.limit ? page[page.length - 1]!.row.id : null,
  };
}

/** One routine with its newest outcomes (newest first). */
export async function getRoutine(db: Db, id: string, now: Date, recent = 20) {
  const row = await requireRoutine(db, id);
  const rows = await db
    .select({ type: events.type, payload: events.payload, createdAt: events.createdAt })
    .from(events)
    .where(and(eq(events.subject, id), sql`${events.type} IN ${OUTCOME_TYPES}`))
    .orderBy(desc(events.id))
    .limit(recent)
    .all();
  const outcomes = rows.map((e) => outcomeOf(e.type, e.payload, e.createdAt));
  return { ...routineView(row, now, outcomes[0] ?? null), recent_outcomes: outcomes };
}

/** The employee a routine works for must exist; a retired one takes no new routine (409). */
async function requireWorkingEmployee(db: Db, id: string) {
  const employee = await findEmployee(db, id);
  if (!employee) {
    throw new AppError("validation_failed", `employee_id: unknown employee '${id}'`, {
      errors: [{ path: "employee_id", message: `unknown employee '${id}'` }],
    });
  }
  if (employee.status === "retired") throw new AppError("employee_retired", `employee ${id} is retired; its routines do not run`);
  return employee;
}

/**
 * A new routine. Its `last_slot` starts at the newest slot already passed, so it first fires at the
 * first slot after its creation (never for one before it existed).
 */
export async function createRoutine(db: Db, body: RoutineBody, actor: string, now: Date): Promise<RoutineRow> {
  await requireWorkingEmployee(db, body.employee_id);
  const at = now.toISOString();
  const row: RoutineRow = {
    id: newId("rtn"),
    employeeId: body.employee_id,
    name: body.name,
    schedule: body.schedule,
    template: body.template,
    enabled: body.enabled,
    lastSlot: latestSlot(body.schedule, now, now),
    lastTaskId: null,
    lastFiredAt: null,
    revision: 1,
    createdBy: actor,
    createdAt: at,
    updatedAt: at,
  };
  await db.batch([
    db.insert(routines).values(row),
    appendEvent(
      db,
      {
        type: "routine.created",
        subject: row.id,
        payload: {
          routine_id: row.id,
          employee_id: row.employeeId,
          name: row.name,
          schedule: row.schedule,
          enabled: row.enabled,
          by: actor,
        },
      },
      now,
    ),
  ]);
  return row;
}

const sameSchedule = (a: RoutineSchedule, b: RoutineSchedule) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Changes a routine (one conditional write with its event, on the revision read; a stale `revision`
 * in the body is a 409). A new schedule, or enabling a disabled routine, settles the slots already
 * passed: the routine fires first at the next slot after the change, never for a slot it missed
 * while disabled or that belonged to the old schedule.
 */
export async function updateRoutine(db: Db, id: string, patch: RoutinePatch, actor: string, now: Date) {
  const row = await requireRoutine(db, id);
  if (patch.revision !== undefined && patch.revision !== row.revision) {
    throw new AppError("conflict", `routine ${id} is at revision ${row.revision}, not ${patch.revision}; read it again`, {
      extra: { revision: row.revision },
    });
  }
  const enabling = patch.enabled === true && !row.enabled;
  if (enabling) await requireWorkingEmployee(db, row.employeeId);
  const schedule = patch.schedule ?? row.schedule;
  const rescheduled = patch.schedule !== undefined && !sameSchedule(patch.schedule, row.schedule);
  const passed = rescheduled || enabling ? latestSlot(schedule, new Date(row.createdAt), now) : null;
  const at = now.toISOString();
  const same = and(eq(routines.id, id), eq(routines.revision, row.revision));
  const changed = Object.keys(patch).filter((k) => k !== "revision");
  const [, updated] = await db.batch([
    appendEventWhere(
      db,
      {
        type: "routine.updated",
        subject: id,
        payload: { routine_id: id, employee_id: row.employeeId, changed, schedule, enabled: patch.enabled ?? row.enabled, by: actor },
      },
      now,
      sql`EXISTS (SELECT 1 FROM ${routines} WHERE ${same})`,
    ),
    db
      .update(routines)
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.schedule !== undefined ? { schedule: patch.schedule } : {}),
        ...(patch.template !== undefined ? { template: patch.template } : {}),
        ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
        // Never backwards: the tick may have claimed a newer slot since this row was read.
        ...(passed !== null
          ? {
              lastSlot: sql`CASE WHEN ${routines.lastSlot} IS NULL OR ${routines.lastSlot} < ${passed} THEN ${passed} ELSE ${routines.lastSlot} END`,
            }
          : {}),
        revision: row.revision + 1,
        updatedAt: at,
      })
      .where(same)
      .returning(),
  ]);
  if (!updated[0]) throw new AppError("conflict", `routine ${id} was changed concurrently; read it again and retry`);
  return updated[0];
}

export async function deleteRoutine(db: Db, id: string, actor: string, now: Date) {
  const row = await requireRoutine(db, id);
  const [, deleted] = await db.batch([
    appendEventWhere(
      db,
      { type: "routine.deleted", subject: id, payload: { routine_id: id, employee_id: row.employeeId, name: row.name, by: actor } },
      now,
      sql`EXISTS (SELECT 1 FROM ${routines} WHERE ${routines.id} = ${id})`,
    ),
    db.delete(routines).where(eq(routines.id, id)).returning({ id: routines.id }),
  ]);
  if (!deleted[0]) throw notFound(`routine ${id}`);
  return { routine_id: id, deleted: true as const };
}

// The claim: the tick moves `last_slot` forward with one conditional write, so whichever tick
// runs it first owns the slot and every other tick (concurrent, or after a restart) sees it taken.

/** Unclaimed, unchanged and enabled: the row the tick read still stands and the slot is newer. */
function claimable(r: RoutineRow, slot: string) {
  return and(
    eq(routines.id, r.id),
    eq(routines.revision, r.revision),
    eq(routines.enabled, true),
    or(isNull(routines.lastSlot), lt(routines.lastSlot, slot)),
  );
}

/** One outcome event per slot: its dedupe key is the routine and the slot. */
const outcomeKey = (r: RoutineRow, slot: string) => `routine:${r.id}:${slot}`;

/** Claims `slot` and records why it opens no goal, in one batch: both land or neither. True when claimed here. */
export async function claimAndSkip(db: Db, r: RoutineRow, slot: string, payload: Record<string, unknown>, now: Date): Promise<boolean> {
  const guard = claimable(r, slot);
  const [, claimed] = await db.batch([
    appendEventWhere(
      db,
      { type: "routine.skipped", subject: r.id, payload, dedupeKey: outcomeKey(r, slot) },
      now,
      sql`EXISTS (SELECT 1 FROM ${routines} WHERE ${guard})`,
    ),
    db.update(routines).set({ lastSlot: slot }).where(guard).returning({ id: routines.id }),
  ]);
  return claimed.length > 0;
}

/** Claims `slot` for a fire; the outcome is recorded once the goal is opened (or refused). True when claimed here. */
export async function claimToFire(db: Db, r: RoutineRow, slot: string): Promise<boolean> {
  const claimed = await db.update(routines).set({ lastSlot: slot }).where(claimable(r, slot)).returning({ id: routines.id });
  return claimed.length > 0;
}

/** The goal a claimed slot opened: kept on the row (a later slot merges into it while it is open) and recorded. */
export async function recordFired(db: Db, r: RoutineRow, slot: string, taskId: string, payload: Record<string, unknown>, now: Date) {
  await db.batch([
    db.update(routines).set({ lastTaskId: taskId, lastFiredAt: now.toISOString() }).where(eq(routines.id, r.id)),
    appendEvent(db, { type: "routine.fired", subject: r.id, payload, dedupeKey: outcomeKey(r, slot) }, now),
  ]);
}

/** A claimed slot whose goal was refused. */
export async function recordRefused(db: Db, r: RoutineRow, slot: string, payload: Record<string, unknown>, now: Date) {
  await appendEvent(db, { type: "routine.skipped", subject: r.id, payload, dedupeKey: outcomeKey(r, slot) }, now);
}
