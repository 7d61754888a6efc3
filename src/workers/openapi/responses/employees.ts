import * as z from "zod";
import { EMPLOYEE_STATUSES, MODEL_EFFORTS, PAUSE_REASONS } from "../../../db/schema";
import { RUNTIMES } from "../../../db/runtimes";
import { employeeEvolution } from "../../../evolution/config";
import { contractSchema } from "../../../evolution/contract";
import type { employeeView, listEmployees } from "../../../tasks/employees";
import { jsonObject, timestamp } from "./common";
import { effectiveTeamSchema, teamSettingsWrittenSchema } from "./team";

const employeeShape = {
  employee_id: z.string(),
  name: z.string(),
  reports_to: z.string().nullable(),
  runtime: z.enum(RUNTIMES),
  model: z.object({ preferred: z.string(), effort: z.enum(MODEL_EFFORTS).optional() }),
  capabilities: z.object({ allowed_tools: z.array(z.string()).optional(), denied_tools: z.array(z.string()).optional() }).optional(),
  sandbox_enabled: z.boolean().optional(),
  /** active, paused (no job of its is leased; `paused_reason` says by whom) or retired (history kept, no new work). */
  status: z.enum(EMPLOYEE_STATUSES),
  paused_reason: z.enum(PAUSE_REASONS).nullable(),
  status_changed_at: timestamp.nullable(),
  status_changed_by: z.string().nullable(),
  revision: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
};

/** What dispatch and the runner will actually use (src/tasks/employees.ts `employeeView`). */
const effectiveShape = {
  runtime: z.enum(RUNTIMES),
  model: z.object({ preferred: z.string(), effort: z.enum(MODEL_EFFORTS).nullable() }),
  capabilities: z.object({
    allowed_tools: z.array(z.string()),
    allowed_tools_source: z.enum(["employee", "default"]),
    denied_tools: z.array(z.string()),
  }),
  sandbox_enabled: z.boolean(),
  /** The employee's own config sections, keyed by section name, as stored. */
  config: jsonObject,
};

/** An employee in a list (no team section, no direct reports). */
export const employeeListItemSchema = z.object({ ...employeeShape, effective: z.object(effectiveShape) }) satisfies z.ZodType<
  ReturnType<typeof employeeView>
>;

export const employeePageSchema = z.object({
  employees: z.array(employeeListItemSchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listEmployees>>>;

/**
 * One employee as `GET /v1/employees/:id` shows it: its own `team`, `evolution` and `contract` sections
 * as written, and its effective `[team]` beside the rest of the effective config.
 */
export const employeeSchema = z.object({
  ...employeeShape,
  team: teamSettingsWrittenSchema.optional(),
  evolution: employeeEvolution.optional(),
  contract: contractSchema.optional(),
  effective: z.object({ ...effectiveShape, team: effectiveTeamSchema }),
  direct_reports: z.array(z.string()),
});

/** `PUT /v1/employees/:id`: the employee as stored, and whether the PUT created it. */
export const employeePutSchema = employeeSchema.omit({ direct_reports: true }).extend({ created: z.boolean() });

/** `POST /v1/employees/:id/pause` and `/resume`: the employee after the change, and what changed. */
export const employeeLifecycleSchema = employeeListItemSchema.extend({
  /** False when it already was in the state asked for (a repeat is a no-op). */
  changed: z.boolean(),
  /** False when an inbox could not be told at once; the `budgets` tick brings it in line within a minute. */
  inboxes_synced: z.boolean(),
});

/** `POST /v1/employees/:id/retire`: also the jobs that ended and the tasks handed back to a person. */
export const employeeRetiredSchema = employeeLifecycleSchema.extend({
  withdrawn_jobs: z.array(z.string()),
  handed_back_tasks: z.array(z.string()),
});
