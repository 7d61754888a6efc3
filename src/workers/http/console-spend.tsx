/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { BUDGET_SCOPES } from "../../db/schema";
import { monthOf } from "../../jobs/holds";
import { AppError } from "../../lib/errors";
import { costLedger, monthDays } from "../../spend/ledger";
import { budgetsView, liftBudget } from "../../spend/view";
import type { Viewer } from "../../web/layout";
import { SpendPage, type LiftProblem } from "../../web/pages/console-spend";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { formProblem, page, problemStatus } from "./html";

type C = Context<ConsoleEnv>;

/** A console page in the document (as in console.tsx). */
const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });

// Mounted ahead of console.tsx's `use("*", htmlPages())`, so each route carries it itself.
const html = htmlPages();

const monthQuery = z.object({
  month: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .regex(/^\d{4}-(0[1-9]|1[0-2])$/, "a UTC month, YYYY-MM")
      .optional(),
  ),
});
const budgetParam = z.object({
  scope: z.enum(BUDGET_SCOPES),
  id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/),
});

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

async function spendPage(
  c: C,
  month: string | undefined,
  problem: LiftProblem | null = null,
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
) {
  const db = getDb(c.env.DB);
  const now = c.var.clock.now();
  const shown = month ?? monthOf(now);
  const { from, to } = monthDays(shown);
  const [perDay, byEmployee, byModel, byRuntime, byProject, budgets] = await Promise.all([
    costLedger(db, "day", from, to),
    costLedger(db, "employee", from, to),
    costLedger(db, "model", from, to),
    costLedger(db, "runtime", from, to),
    costLedger(db, "project", from, to),
    budgetsView(db, now),
  ]);
  const byDay = new Map(perDay.map((r) => [r.key, r]));
  const lastDay = Number(to.slice(8));
  const days = Array.from({ length: lastDay }, (_, i) => {
    const day = `${shown}-${String(i + 1).padStart(2, "0")}`;
    return { day, row: byDay.get(day) };
  });
  return page(
    c,
    <SpendPage
      viewer={viewerOf(c)}
      month={shown}
      days={days}
      groups={[
        { id: "by-employee", title: "By employee", keyLabel: "Employee", rows: byEmployee },
        { id: "by-model", title: "By model", keyLabel: "Model", rows: byModel },
        { id: "by-runtime", title: "By runtime", keyLabel: "Runtime", rows: byRuntime },
        { id: "by-project", title: "By project", keyLabel: "Project", rows: byProject },
      ]}
      budgets={budgets.budgets}
      budgetMonth={budgets.month}
      problem={problem}
    />,
    status,
  );
}

/** `/console/spend` (docs/spend.md): the month's cost, the budgets, and a manager's lift. */
export const consoleSpendRoutes = new Hono<ConsoleEnv>()
  .get(
    "/spend",
    describe({
      summary: "The spend page: the month's cost by employee, model, runtime, project and day, and the budgets",
      responses: { 200: pageDoc("The cost ledger of `month` (default this UTC month) and this month's budgets") },
      errors: ["validation_failed"],
    }),
    html,
    requireConsole("viewer"),
    validate("query", monthQuery),
    (c) => spendPage(c, c.req.valid("query").month),
  )
  .post(
    "/spend/budgets/:scope/:id/lift",
    describe({
      summary: "Lift an exceeded budget for the rest of the month (the spend page's form), as a manager",
      responses: {
        303: { description: "Lifted: back to the budget on the spend page" },
        409: pageDoc("Not exceeded this month: the spend page, the problem on the budget"),
      },
      errors: ["not_found", "conflict"],
    }),
    html,
    requireConsole("manager"),
    validate("param", budgetParam),
    async (c) => {
      const { scope, id } = c.req.valid("param");
      try {
        await liftBudget(c.env, getDb(c.env.DB), scope, id, c.var.session.principal.id, c.var.clock.now());
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== "conflict") throw err;
        return spendPage(c, undefined, { scope, id, problem: formProblem(err)! }, problemStatus(err));
      }
      return c.redirect(`/console/spend#budget-${scope}-${id}`, 303);
    },
  );
