/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { AppError } from "../../lib/errors";
import { roleAtLeast } from "../../lib/auth";
import { createRoutine, deleteRoutine, listRoutines, routineBody, routineId, updateRoutine } from "../../routines/store";
import { listEmployees } from "../../tasks/employees";
import type { Viewer } from "../../web/layout";
import { RoutinesPage, type RoutineDraft, type RoutineRowProblem } from "../../web/pages/console-routines";
import type { FormProblem } from "../../web/components/common";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { describe, type ResponseDoc } from "../openapi/describe";
import { validate } from "../middleware/validate";
import { formProblem, page, problemStatus, readForm } from "./html";

type C = Context<ConsoleEnv>;

/** A console page in the document (as console.tsx's pageDoc). */
const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });

// Mounted by console.tsx before its own `htmlPages()`, so each route takes it here.
const html = htmlPages();
const viewer = requireConsole("viewer");
const manager = requireConsole("manager");
const idParam = z.object({ id: routineId });

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

async function routinesPage(
  c: C,
  shown: { problem?: FormProblem | null; draft?: RoutineDraft; rowProblem?: RoutineRowProblem | null } = {},
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
) {
  const db = getDb(c.env.DB);
  const now = c.var.clock.now();
  const [list, staff] = await Promise.all([listRoutines(db, { limit: 500 }, now), listEmployees(db, { limit: 500 })]);
  // A retired employee takes no routine: it is not offered.
  const employees = staff.employees
    .filter((e) => e.status !== "retired")
    .map((e) => ({ employee_id: e.employee_id, name: e.name, status: e.status }));
  return page(
    c,
    <RoutinesPage
      viewer={viewerOf(c)}
      now={now}
      routines={list.routines}
      employees={employees}
      canManage={roleAtLeast(c.var.session.principal.role, "manager")}
      {...shown}
    />,
    status,
  );
}

/** The create form as the API's body: one schedule field filled, criteria one per line. */
function bodyOfForm(form: Record<string, string>) {
  const cron = form.cron?.trim();
  const every = form.every_minutes?.trim();
  return {
    employee_id: form.employee_id ?? "",
    name: form.name ?? "",
    schedule: { ...(cron ? { cron } : {}), ...(every ? { every_minutes: Number(every) } : {}) },
    template: {
      title: form.title ?? "",
      acceptance_criteria: (form.acceptance_criteria ?? "")
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean),
    },
  };
}

/** A routine's row action; a refusal other than not_found comes back on its row. */
async function rowAction(c: C, id: string, work: () => Promise<unknown>) {
  try {
    await work();
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500 || err.code === "not_found") throw err;
    return routinesPage(c, { rowProblem: { routineId: id, problem: formProblem(err)! } }, problemStatus(err));
  }
  return c.redirect(`/console/routines#routine-${id}`, 303);
}

const rowResponses = (did: string) => ({
  303: { description: `${did}: back to the routine on the routines page` },
  409: pageDoc("Refused (a retired employee, or changed meanwhile): the routines page, the problem on the routine"),
});

/** `/console/routines` (docs/routines.md): the list, the create form and each routine's buttons. */
export const consoleRoutinesRoutes = new Hono<ConsoleEnv>()
  .get(
    "/routines",
    describe({
      summary: "The routines page",
      responses: { 200: pageDoc("Every routine (up to 500) with its schedule, next slot and last outcome, and (for a manager) the forms") },
    }),
    html,
    viewer,
    (c) => routinesPage(c),
  )
  .post(
    "/routines",
    describe({
      summary: "Create a routine (the routines page's form)",
      responses: {
        303: { description: "Created: back to the routine on the routines page" },
        409: pageDoc("The employee is retired: the routines page with the draft, the problem inline"),
        422: pageDoc(
          "An invalid field (a bad cron expression, no schedule, no title): the routines page with the draft, each problem by its field",
        ),
      },
      errors: ["validation_failed", "employee_retired"],
    }),
    html,
    manager,
    async (c) => {
      const form = await readForm(c);
      const draft: RoutineDraft = {
        employee_id: form.employee_id,
        name: form.name,
        cron: form.cron,
        every_minutes: form.every_minutes,
        title: form.title,
        acceptance_criteria: form.acceptance_criteria,
      };
      try {
        const parsed = routineBody.safeParse(bodyOfForm(form));
        if (!parsed.success) {
          throw new AppError("validation_failed", "The routine is invalid", {
            errors: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
          });
        }
        const row = await createRoutine(getDb(c.env.DB), parsed.data, c.var.session.principal.id, c.var.clock.now());
        return c.redirect(`/console/routines#routine-${row.id}`, 303);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        return routinesPage(c, { problem: formProblem(err), draft }, problemStatus(err));
      }
    },
  )
  .post(
    "/routines/:id/enable",
    describe({
      summary: "Enable a routine (the routines page's button)",
      responses: rowResponses("Enabled"),
      errors: ["not_found", "conflict", "employee_retired"],
    }),
    html,
    manager,
    validate("param", idParam),
    async (c) => {
      const { id } = c.req.valid("param");
      return rowAction(c, id, () => updateRoutine(getDb(c.env.DB), id, { enabled: true }, c.var.session.principal.id, c.var.clock.now()));
    },
  )
  .post(
    "/routines/:id/disable",
    describe({
      summary: "Disable a routine (the routines page's button)",
      responses: rowResponses("Disabled"),
      errors: ["not_found", "conflict"],
    }),
    html,
    manager,
    validate("param", idParam),
    async (c) => {
      const { id } = c.req.valid("param");
      return rowAction(c, id, () => updateRoutine(getDb(c.env.DB), id, { enabled: false }, c.var.session.principal.id, c.var.clock.now()));
    },
  )
  .post(
    "/routines/:id/delete",
    describe({
      summary: "Delete a routine (the routines page's button)",
      responses: { 303: { description: "Deleted: back to the routines page" } },
      errors: ["not_found"],
    }),
    html,
    manager,
    validate("param", idParam),
    async (c) => {
      const { id } = c.req.valid("param");
      await deleteRoutine(getDb(c.env.DB), id, c.var.session.principal.id, c.var.clock.now());
      return c.redirect("/console/routines", 303);
    },
  );
