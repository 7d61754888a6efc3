import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { RUNTIMES } from "../runtimes";

export const EMPLOYEE_STATUSES = ["active", "paused", "retired"] as const;
export type EmployeeStatus = (typeof EMPLOYEE_STATUSES)[number];
export const PAUSE_REASONS = ["manual", "budget"] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

export const MODEL_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

/**
 * The employee registry. `reports_to` forms a forest (no cycles, no unknown parents), which the
 * write itself guards. `config` holds per-employee config sections that later features add (the
 * Team-as-Agent `team` section), keyed by section name, so they need no new columns.
 */
export const employees = sqliteTable(
  "employees",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    reportsTo: text("reports_to"),
    runtime: text("runtime", { enum: RUNTIMES }).notNull(),
    modelPreferred: text("model_preferred").notNull(),
    modelEffort: text("model_effort", { enum: MODEL_EFFORTS }),
    // As given; absent means "not set", and the effective view says which default applies.
    capabilities: text("capabilities", { mode: "json" }).$type<{ allowed_tools?: string[]; denied_tools?: string[] }>(),
    sandboxEnabled: integer("sandbox_enabled", { mode: "boolean" }),
    config: text("config", { mode: "json" })
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'`),
    revision: integer("revision").notNull().default(1),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    // The lifecycle (src/employees/lifecycle.ts): a paused employee's queued jobs are held in the
    // inboxes and none is leased; a retired one keeps its history and takes no new work.
    status: text("status", { enum: EMPLOYEE_STATUSES }).notNull().default("active"),
    /** Why it is paused: by a person (`manual`) or by its monthly budget (`budget`); null when active or retired. */
    pausedReason: text("paused_reason", { enum: PAUSE_REASONS }),
    statusChangedAt: text("status_changed_at"),
    statusChangedBy: text("status_changed_by"),
  },
  (t) => [index("employees_reports_to_idx").on(t.reportsTo), index("employees_status_idx").on(t.status)],
);
export type EmployeeRow = typeof employees.$inferSelect;

export const TASK_MODES = ["goal", "plain"] as const;
export type TaskMode = (typeof TASK_MODES)[number];
export const TASK_PRIORITIES = ["low", "medium", "high", "critical"] as const;
export const SETTLED_TASK_STATUSES = ["done", "needs_human", "failed"] as const;
export type SettledTaskStatus = (typeof SETTLED_TASK_STATUSES)[number];
export const TASK_STATUSES = ["assigned", ...SETTLED_TASK_STATUSES] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const PAUSE_CLASSES = ["no_progress", "budget_exhausted", "blocked_needs_decision", "infra", "restart", "unknown"] as const;
export type PauseClass = (typeof PAUSE_CLASSES)[number];
export const ROUTED_BY = ["hierarchy", "override", "round_robin", "llm_select"] as const;
export type RoutedBy = (typeof ROUTED_BY)[number];

/** How a task was routed, as recorded on it (why a fallback happened, which override, which job). */
export interface TaskRoute {
  policy: "fixed_hierarchy" | "round_robin" | "llm_select" | "role_team";
  /** Set when the policy could not route and the hierarchy did instead (`roster_empty`, `llm_select_timeout`, …). */
  fallback?: string;
  override_id?: string;
  roster?: string[];
  job_id?: string;
}

/**
 * Goal-mode and plain tasks. The row is written once, with its final route, so a task is never
 * seen unassigned or assigned twice. `task_class` is fixed at creation (first tag, else priority).
 * Later features (Team-as-Agent) keep their per-task state in their own tables keyed by task id.
 */
export const tasks = sqliteTable(
  "tasks",
  {
    id: text("id").primaryKey(),
    title: text("title").notNull(),
    mode: text("mode", { enum: TASK_MODES }).notNull(),
    tags: text("tags", { mode: "json" }).$type<string[]>().notNull(),
    priority: text("priority", { enum: TASK_PRIORITIES }).notNull(),
    taskClass: text("task_class").notNull(),
    acceptanceCriteria: text("acceptance_criteria", { mode: "json" }).$type<string[]>().notNull(),
    assignee: text("assignee").notNull(),
    assignedTo: text("assigned_to").notNull(),
    routedBy: text("routed_by", { enum: ROUTED_BY }).notNull(),
    route: text("route", { mode: "json" }).$type<TaskRoute>().notNull(),
    status: text("status", { enum: TASK_STATUSES }).notNull(),
    retryCount: integer("retry_count").notNull().default(0),
    pauseClass: text("pause_class", { enum: PAUSE_CLASSES }),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    settledAt: text("settled_at"),
    settledBy: text("settled_by"),
    // True: nobody works the task but a person (settled by hand). False: the goal loop works it,
    // round after round (src/team/goal-loop.ts). The SQL default is true so that a row written by
    // anything but createTask (older code, a restore, a bulk insert) never starts model work.
    manual: integer("manual", { mode: "boolean" }).notNull().default(true),
    // The goal loop's round budget (`rounds_left` at creation); null for a manual task.
    roundsBudget: integer("rounds_budget"),
    // The conversation the task came from (seed 002: a team round's progress line goes there); null: none.
    originConversationId: text("origin_conversation_id"),
  },
  (t) => [
    // Settled goal tasks by settlement time, covering what evidence counts: the D5 fold and the
    // evidence query read ranges of it (a day or two per tick once folded) with no table lookups.
    index("tasks_evidence_idx")
      .on(t.settledAt, t.assignedTo, t.taskClass, t.status, t.retryCount, t.pauseClass)
      .where(sql`mode = 'goal' AND settled_at IS NOT NULL`),
    index("tasks_assignee_idx").on(t.assignedTo, t.taskClass, t.createdAt),
    // Tasks the goal loop still works, oldest first (the team tick's backstop and an employee's queue).
    index("tasks_worked_idx")
      .on(t.assignedTo, t.createdAt)
      .where(sql`status = 'assigned' AND manual = 0`),
  ],
);
export type TaskRow = typeof tasks.$inferSelect;

/** Round-robin position per task class (the roster lives in the `dispatch` config section). */
export const dispatchCursors = sqliteTable("dispatch_cursors", {
  taskClass: text("task_class").primaryKey(),
  counter: integer("counter").notNull(),
});
