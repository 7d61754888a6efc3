import * as z from "zod";
import type { RoutineSchedule } from "../db/schema";
import { cronProblem, latestSlotAtOrBefore, nextSlotAfter, parseCron } from "./cron";

/**
 * A routine's slots, pure. A slot is a whole UTC minute, written as an ISO 8601 string (so slots
 * compare as strings). A cron schedule's slots are the minutes its expression matches; an
 * `every_minutes` schedule's are its anchor (the routine's creation, to the minute) plus every N
 * minutes.
 */

const MINUTE_MS = 60_000;
/** Up to a week between slots of an interval schedule. */
export const EVERY_MINUTES_MAX = 10_080;

const cronExpression = z
  .string()
  .trim()
  .min(1, "a cron expression (minute hour day-of-month month day-of-week, UTC)")
  .max(200)
  .superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: `not a valid cron expression: ${problem}` });
  });

/**
 * `{cron}` or `{every_minutes}`, exactly one. One object with both optional (rather than a union) so
 * a refusal names its field: `schedule.cron` for a bad expression.
 */
export const scheduleInput = z
  .strictObject({
    cron: cronExpression.optional(),
    every_minutes: z.number().int().min(1).max(EVERY_MINUTES_MAX).optional(),
  })
  .superRefine((s, ctx) => {
    if ((s.cron === undefined) === (s.every_minutes === undefined)) {
      ctx.addIssue({ code: "custom", message: "give exactly one of cron and every_minutes" });
    }
  })
  .transform((s): RoutineSchedule => (s.cron !== undefined ? { cron: s.cron } : { every_minutes: s.every_minutes! }));

const floorMinute = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** The newest slot at or before `now` (null: none yet, or a cron past its search span). */
export function latestSlot(schedule: RoutineSchedule, anchor: Date, now: Date): string | null {
  if ("cron" in schedule) return latestSlotAtOrBefore(schedule.cron, now)?.toISOString() ?? null;
  const start = floorMinute(anchor.getTime());
  if (now.getTime() < start) return null;
  const period = schedule.every_minutes * MINUTE_MS;
  return new Date(start + Math.floor((now.getTime() - start) / period) * period).toISOString();
}

/** The first slot strictly after `after`. */
export function nextSlot(schedule: RoutineSchedule, anchor: Date, after: Date): string | null {
  if ("cron" in schedule) return nextSlotAfter(schedule.cron, after)?.toISOString() ?? null;
  const start = floorMinute(anchor.getTime());
  if (after.getTime() < start) return new Date(start).toISOString();
  const period = schedule.every_minutes * MINUTE_MS;
  return new Date(start + (Math.floor((after.getTime() - start) / period) + 1) * period).toISOString();
}

/**
 * The slot the tick should handle at `now`: the newest slot at or before `now`, when it is newer
 * than `lastSlot`. Older unhandled slots (missed while nothing ran) are not returned: they collapse
 * into this one.
 */
export function dueSlot(schedule: RoutineSchedule, anchor: Date, lastSlot: string | null, now: Date): string | null {
  const slot = latestSlot(schedule, anchor, now);
  if (slot === null || (lastSlot !== null && slot <= lastSlot)) return null;
  return slot;
}

/** The slot shown as next: a due one not yet handled, else the first after `now`. */
export function upcomingSlot(schedule: RoutineSchedule, anchor: Date, lastSlot: string | null, now: Date): string | null {
  return dueSlot(schedule, anchor, lastSlot, now) ?? nextSlot(schedule, anchor, now);
}

/**
 * How many slots lie strictly between `lastSlot` and `slot`: the ones missed while nothing ran, which
 * the fire of `slot` stands for. Counted up to `cap` (a cron walks slot by slot).
 */
export function missedSlots(schedule: RoutineSchedule, anchor: Date, lastSlot: string | null, slot: string, cap = 1_000): number {
  if (lastSlot === null || lastSlot >= slot) return 0;
  if (!("cron" in schedule)) {
    const period = schedule.every_minutes * MINUTE_MS;
    const start = floorMinute(anchor.getTime());
    // Slots k with lastSlot < start + k·period < slot.
    const first = Math.floor((Date.parse(lastSlot) - start) / period) + 1;
    const last = Math.round((Date.parse(slot) - start) / period) - 1;
    return Math.min(cap, Math.max(0, last - first + 1));
  }
  const spec = parseCron(schedule.cron);
  let n = 0;
  let t = nextSlotAfter(spec, new Date(lastSlot));
  while (t && t.toISOString() < slot && n < cap) {
    n++;
    t = nextSlotAfter(spec, t);
  }
  return n;
}
