import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export type RoutineSchedule = { cron: string } | { every_minutes: number };

/**
 * Scheduled work of an employee (src/routines): on each slot of its schedule the `routines` tick
 * opens a goal from `template`. `last_slot` is the newest slot already handled (fired, merged or
 * skipped); the tick moves it forward with a conditional write, so a slot fires at most once however
 * many ticks see it, and slots missed while down collapse into one fire.
 */
export const routines = sqliteTable(
  "routines",
  {
    id: text("id").primaryKey(),
    employeeId: text("employee_id").notNull(),
    name: text("name").notNull(),
    schedule: text("schedule", { mode: "json" }).$type<RoutineSchedule>().notNull(),
    /** The goal body (`POST /v1/employees/:id/goals`) each fire opens. */
    template: text("template", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    lastSlot: text("last_slot"),
    /** The goal task the last fire opened: while it is still open, a new slot merges into it. */
    lastTaskId: text("last_task_id"),
    lastFiredAt: text("last_fired_at"),
    revision: integer("revision").notNull().default(1),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("routines_employee_idx").on(t.employeeId)],
);
export type RoutineRow = typeof routines.$inferSelect;
