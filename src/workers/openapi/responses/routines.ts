import * as z from "zod";
import type { deleteRoutine, getRoutine, listRoutines, RoutineOutcome, RoutineView } from "../../../routines/store";
import { ROUTINE_SKIP_REASONS } from "../../../routines/store";
import { goalBody } from "../../../team/goal-request";
import { timestamp } from "./common";

/** `{cron}` (five fields, UTC) or `{every_minutes}` (anchored at the routine's creation). */
const scheduleSchema = z.union([z.strictObject({ cron: z.string() }), z.strictObject({ every_minutes: z.number().int() })]);

/** What one claimed slot came to (a `routine.fired` or `routine.skipped` event). */
const outcomeSchema = z.object({
  slot: timestamp,
  outcome: z.enum(["fired", "skipped"]),
  /** Why no goal opened; null for a fire. */
  reason: z.enum(ROUTINE_SKIP_REASONS).nullable(),
  /** The goal opened (fired), or the open goal the wake merged into (`previous_goal_open`). */
  task_id: z.string().nullable(),
  /** The refusal's code (`goal_refused`). */
  error_code: z.string().nullable(),
  at: timestamp,
}) satisfies z.ZodType<RoutineOutcome>;

/** A routine as the API shows it (src/routines/store.ts `routineView`). */
export const routineSchema = z.object({
  routine_id: z.string(),
  employee_id: z.string(),
  name: z.string(),
  schedule: scheduleSchema,
  /** The goal body each fire opens (`POST /v1/employees/:id/goals`). */
  template: goalBody,
  enabled: z.boolean(),
  /** The slot the tick handles next (a past one while it is due and no tick has run yet); null when disabled. */
  next_slot: timestamp.nullable(),
  /** The newest slot handled, or passed before the routine existed or was rescheduled or enabled. */
  last_slot: timestamp.nullable(),
  last_task_id: z.string().nullable(),
  last_fired_at: timestamp.nullable(),
  last_outcome: outcomeSchema.nullable(),
  revision: z.number().int(),
  created_by: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
}) satisfies z.ZodType<RoutineView>;

export const routinePageSchema = z.object({
  routines: z.array(routineSchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listRoutines>>>;

/** `GET /v1/routines/:id`: also its newest outcomes, newest first (up to 20). */
export const routineDetailSchema = routineSchema.extend({ recent_outcomes: z.array(outcomeSchema) }) satisfies z.ZodType<
  Awaited<ReturnType<typeof getRoutine>>
>;

export const routineDeletedSchema = z.object({ routine_id: z.string(), deleted: z.literal(true) }) satisfies z.ZodType<
  Awaited<ReturnType<typeof deleteRoutine>>
>;
