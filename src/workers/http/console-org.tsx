/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { firstRunState, runtimeChoices } from "../../console/first-run";
import { formValues, placeErrors, schemaFields, valueFromForm } from "../../console/schema-form";
import { getDb, type Db } from "../../db/client";
import type { EmployeeRow } from "../../db/schema";
import { AppError, fieldErrorsFromIssues, notFound } from "../../lib/errors";
import { employeeBodyShape, employeeId, employeeView, findEmployee, listEmployees, putEmployee } from "../../tasks/employees";
import type { Viewer } from "../../web/layout";
import type { FormProblem } from "../../web/components/common";
import { EditEmployeePage } from "../../web/pages/console-edit-employee";
import { DEFAULT_MODELS, NewEmployeePage, type EmployeeDraft } from "../../web/pages/console-new-employee";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { employeePutBody } from "./employees";
import { formProblem, page, problemStatus, readForm, refusalOf } from "./html";

type C = Context<ConsoleEnv>;

/** A console page in the document (as console.tsx's pageDoc). */
const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });

// Mounted by console.tsx before its own `htmlPages()` (and before its `/employees/:id`, whose id
// pattern would take "new"), so each route takes the page middleware here.
const html = htmlPages();
const manager = requireConsole("manager");

/** The create form: the id beside `PUT /v1/employees/:id`'s body, so every field's problem comes back at once. */
const createForm = z.strictObject({ id: employeeId, ...employeeBodyShape });

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

/** The "Get started" panel for the console's home and the employees page, or null once its steps are done. */
export async function firstRunPanel(c: C) {
  const state = await firstRunState(c.env, getDb(c.env.DB), c.var.clock.now());
  return state ? { state, origin: new URL(c.req.url).origin } : null;
}

async function newEmployeePage(c: C, shown: { problem?: FormProblem | null; draft?: EmployeeDraft } = {}, status: 200 | 409 | 422 = 200) {
  const db = getDb(c.env.DB);
  const [staff, runtimes] = await Promise.all([listEmployees(db, { limit: 500 }), runtimeChoices(db, c.var.clock.now())]);
  const employees = staff.employees.filter((e) => e.status !== "retired").map((e) => ({ employee_id: e.employee_id, name: e.name }));
  return page(c, <NewEmployeePage viewer={viewerOf(c)} employees={employees} runtimes={runtimes} {...shown} />, status);
}

/** The form's fields as the API's body; a blank model is the runtime's default, a blank select is none. */
function bodyOfForm(form: Record<string, string>) {
  const runtime = form.runtime ?? "";
  const model = form.model?.trim() || DEFAULT_MODELS[runtime] || "";
  return {
    id: form.id?.trim() ?? "",
    name: form.name?.trim() ?? "",
    reports_to: form.reports_to ? form.reports_to : null,
    runtime,
    model: { preferred: model, ...(form.effort ? { effort: form.effort } : {}) },
  };
}

/** A zod refusal as the problem a JSON route answers (422 validation_failed), with one note for a blank model. */
function invalid(error: z.ZodError, runtime: string): AppError {
  return new AppError("validation_failed", "The employee was not created", {
    errors: error.issues.map((i) => {
      const path = i.path.join(".");
      const blankModel = path === "model.preferred" && !DEFAULT_MODELS[runtime];
      return { path, message: blankModel ? `name a model: ${runtime || "this runtime"} has no default` : i.message };
    }),
  });
}

const idParam = z.object({ id: employeeId });
/** The edit form's fields: everything `PUT /v1/employees/:id` takes, from its own schema. */
const editFields = schemaFields(employeePutBody);

/** What the employee holds, shaped as `PUT /v1/employees/:id`'s body (its own sections as written). */
function putBodyOf(row: EmployeeRow) {
  const { name, reports_to, runtime, model, capabilities, sandbox_enabled } = employeeView(row);
  const config = row.config ?? {};
  return {
    name,
    reports_to,
    runtime,
    model,
    capabilities,
    sandbox_enabled,
    team: config.team,
    evolution: config.evolution,
    contract: config.contract,
  };
}

async function editEmployeePage(
  c: C,
  db: Db,
  row: EmployeeRow,
  shown: { problem?: FormProblem | null; draft?: Record<string, string> } = {},
  status: 200 | 404 | 409 | 422 = 200,
) {
  const staff = await listEmployees(db, { limit: 500 });
  const managers = staff.employees
    .filter((e) => e.status !== "retired" && e.employee_id !== row.id)
    .map((e) => ({ employee_id: e.employee_id, name: e.name }));
  return page(
    c,
    <EditEmployeePage
      viewer={viewerOf(c)}
      employeeId={row.id}
      name={row.name}
      revision={row.revision}
      fields={editFields}
      values={shown.draft ?? formValues(editFields, putBodyOf(row))}
      managers={managers}
      problem={shown.problem ?? null}
    />,
    status,
  );
}

/** The posted edit form as `PUT /v1/employees/:id`'s body, or every field's problem at once (422). */
function editBodyOf(form: Record<string, string>, stored: EmployeeRow) {
  const read = valueFromForm(editFields, form);
  const parsed = employeePutBody.safeParse(read.value);
  const errors = [...read.errors, ...(parsed.success ? [] : fieldErrorsFromIssues(parsed.error.issues))];
  if (!parsed.success || errors.length) throw new AppError("validation_failed", "The employee was not saved", { errors });
  const body = parsed.data;
  // The contract's lists always post (as empty): an employee that had none keeps none rather than gaining an empty one.
  const c = body.contract;
  if (c && stored.config?.contract === undefined && !c.must_not.length && !c.must_always.length && c.max_tool_calls_per_turn === undefined)
    body.contract = undefined;
  return body;
}

/** Creating people and giving them work from the browser: the new-employee form (docs/operations.md "Console: first run and forms"). */
export const consoleOrgRoutes = new Hono<ConsoleEnv>()
  .get(
    "/employees/new",
    describe({
      summary: "The new-employee form",
      responses: { 200: pageDoc("The form: id, name, reports to, runtime (those a live runner offers first), model, effort") },
    }),
    html,
    manager,
    (c) => newEmployeePage(c),
  )
  .post(
    "/employees",
    describe({
      summary: "Create an employee (the new-employee form), as `PUT /v1/employees/:id` does, never replacing one",
      responses: {
        303: { description: "Created: on to the employee's page" },
        409: pageDoc("The id is taken: the form with the draft, the problem on the id"),
        422: pageDoc("An invalid field (a bad id, an unknown manager, no name): the form with the draft, each problem by its field"),
      },
      errors: ["validation_failed", "conflict"],
    }),
    html,
    manager,
    async (c) => {
      const form = await readForm(c);
      const draft: EmployeeDraft = {
        id: form.id,
        name: form.name,
        reports_to: form.reports_to,
        runtime: form.runtime,
        model: form.model,
        effort: form.effort,
      };
      const db = getDb(c.env.DB);
      try {
        const body = bodyOfForm(form);
        const parsed = createForm.safeParse(body);
        if (!parsed.success) throw invalid(parsed.error, body.runtime);
        const { id, ...fields } = parsed.data;
        // The form creates; replacing an employee is the API's PUT (with its whole body), not this.
        if (await findEmployee(db, id)) {
          throw new AppError("conflict", `The id ${id} is taken`, {
            errors: [{ path: "id", message: `${id} is already an employee; choose another id` }],
          });
        }
        await putEmployee(db, id, fields, c.var.session.principal.id, c.var.clock.now());
        return c.redirect(`/console/employees/${id}`, 303);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        const status = problemStatus(err);
        return newEmployeePage(c, { problem: formProblem(err), draft }, status === 409 ? 409 : 422);
      }
    },
  )
  .get(
    "/employees/:id/edit",
    describe({
      summary: "The employee edit form",
      responses: {
        200: pageDoc(
          "Every field `PUT /v1/employees/:id` takes (its own [team], [evolution] and contract included), generated from that schema, with the stored values",
        ),
      },
      errors: ["not_found"],
    }),
    html,
    manager,
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const id = c.req.valid("param").id;
      const row = await findEmployee(db, id);
      if (!row) throw notFound(`employee ${id}`);
      return editEmployeePage(c, db, row);
    },
  )
  .post(
    "/employees/:id/edit",
    describe({
      summary: "Save the employee edit form, as `PUT /v1/employees/:id` does, refused if it changed since the form was read",
      responses: {
        303: { description: "Saved: on to the employee's page" },
        409: pageDoc("The employee changed since the form was read (its revision moved on): the form with the draft and the problem"),
        422: pageDoc(
          "An invalid field (a blank name, a cycle in reports_to, a number out of range): the form with the draft, each problem by its field",
        ),
      },
      errors: ["not_found", "validation_failed", "conflict"],
    }),
    html,
    manager,
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const id = c.req.valid("param").id;
      const row = await findEmployee(db, id);
      if (!row) throw notFound(`employee ${id}`);
      const form = await readForm(c);
      const { revision: revisionText, _csrf, ...draft } = form;
      try {
        const revision = Number(revisionText);
        if (!Number.isInteger(revision) || revision < 1)
          throw new AppError("validation_failed", "The form has no revision", {
            errors: [{ path: "", message: "reload the form and redo the change" }],
          });
        const { team, evolution, contract, ...body } = editBodyOf(form, row);
        await putEmployee(db, id, body, c.var.session.principal.id, c.var.clock.now(), { team, evolution, contract }, revision);
        return c.redirect(`/console/employees/${id}`, 303);
      } catch (err) {
        const refused = refusalOf(err);
        const problem: FormProblem = { ...formProblem(refused)!, fields: placeErrors(editFields, refused.errors ?? []) };
        // A revision conflict shows the draft beside the stored employee's new revision: saving again overwrites knowingly.
        const current = (await findEmployee(db, id)) ?? row;
        return editEmployeePage(c, db, current, { problem, draft }, problemStatus(refused) === 409 ? 409 : 422);
      }
    },
  );
