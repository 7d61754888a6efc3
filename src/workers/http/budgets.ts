import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { BUDGET_SCOPES } from "../../db/schema";
import { budgetsView, liftBudget } from "../../spend/view";
import type { AppEnv } from "../app-env";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import { describe } from "../openapi/describe";
import { budgetLiftedSchema, budgetsSchema } from "../openapi/responses/spend";

const budgetParam = z.object({
  scope: z.enum(BUDGET_SCOPES),
  id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, "an employee or project id, or `company`"),
});

/** Monthly budgets (docs/spend.md): read by viewers, lifted by managers. */
export const budgetsRoutes = new Hono<AppEnv>()
  .get(
    "/",
    describe({
      summary: "Every monthly budget with this month's spend and state",
      description:
        "The `[budgets]` section's budgets (company, employees, projects) with what they spent this UTC month (`\"unknown\"` where no job reported the figure), the share of the limit, and whether the month recorded the warning, the excess or a manager's lift. A budget no longer configured whose stop is still in force is listed with `limit: null`.",
      responses: { 200: budgetsSchema },
    }),
    requireAuth({ operator: "viewer" }),
    async (c) => c.json(await budgetsView(getDb(c.env.DB), c.var.clock.now())),
  )
  .post(
    "/:scope/:id/lift",
    describe({
      summary: "Lift an exceeded budget for the rest of the month: its work goes on",
      description:
        "The project's or the company's held jobs are queued again; an employee paused for its budget is resumed. The budget does not stop work again this month. `409 conflict` when it is not exceeded this month; lifting it again changes nothing (`changed: false`). The company's budget is `company/company`.",
      responses: { 200: budgetLiftedSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", budgetParam),
    async (c) => {
      const { scope, id } = c.req.valid("param");
      return c.json(await liftBudget(c.env, getDb(c.env.DB), scope, id, c.var.principal.id, c.var.clock.now()));
    },
  );
