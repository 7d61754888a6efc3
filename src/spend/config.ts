import * as z from "zod";
import { defineConfigSection } from "../lib/config";
import { projectIdPattern } from "../projects/store";
import { EMPLOYEE_ID_PATTERN } from "../tasks/employees";

/**
 * A monthly limit: dollars, tokens, or both (whichever is reached first counts). Tokens are input +
 * output tokens; cache reads and cache writes are left out (docs/spend.md "What counts").
 */
const limit = z
  .strictObject({
    monthly_usd: z.number().positive().max(1e9).optional(),
    monthly_tokens: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .refine((l) => l.monthly_usd !== undefined || l.monthly_tokens !== undefined, {
    message: "a limit sets monthly_usd, monthly_tokens or both",
  });
export type BudgetLimit = z.infer<typeof limit>;

const employeeKey = z.string().regex(EMPLOYEE_ID_PATTERN, "an employee id");
const projectKey = z.string().regex(projectIdPattern, "a project id (proj_ + 16 hex)");

/**
 * `[budgets]`: monthly spend limits (docs/spend.md). At `warn_ratio` of a limit the feed gets one
 * `budget.warning`; at 100 % one `budget.exceeded`, and the work stops: an employee is paused
 * (`paused_reason: budget`), a project's or the company's queued jobs are held in the inboxes, until
 * a manager lifts it or the month ends. Nothing configured: nothing is checked.
 */
export const budgetsConfig = defineConfigSection(
  "budgets",
  z.object({
    warn_ratio: z.number().min(0.5).max(0.99).default(0.8),
    company: limit.optional(),
    employees: z.record(employeeKey, limit).default({}),
    projects: z.record(projectKey, limit).default({}),
  }),
);
export type BudgetsConfig = z.infer<typeof budgetsConfig.schema>;

/** Whether any limit is configured (none: no job's end reads anything more). */
export function anyBudget(config: BudgetsConfig): boolean {
  return config.company !== undefined || Object.keys(config.employees).length > 0 || Object.keys(config.projects).length > 0;
}
