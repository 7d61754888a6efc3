/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { unverifiedSwarmTasks } from "../../console/lists";
import { getDb } from "../../db/client";
import { PROJECT_STATUSES } from "../../db/schema";
import { submitDecomposition } from "../../projects/decompose";
import { legalTargets } from "../../projects/lifecycle";
import { reputationConfig } from "../../nodes/reputation-config";
import { listProjects, projectId, transitionProject } from "../../projects/store";
import { taskId, taskView, verifyTask } from "../../projects/swarm-tasks";
import { readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import type { FormProblem } from "../../web/components/common";
import type { Viewer } from "../../web/layout";
import {
  ConsoleProjectPage,
  ConsoleProjectsPage,
  DECOMPOSITION_ROWS,
  type DecompositionDraft,
  type VerifyProblem,
} from "../../web/pages/console-projects";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { formProblem, page, readForm, refusalOf } from "./html";
import { projectDetail } from "./projects";

type C = Context<ConsoleEnv>;

const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });
// Mounted by console.tsx before its own `htmlPages()`, so each route takes the page middleware here.
const html = htmlPages();
const viewer = requireConsole("viewer");
const manager = requireConsole("manager");
const projectParam = z.object({ id: projectId });
const taskParam = z.object({ id: taskId });
/** Where a verify goes back to: the projects page or one project's page, never elsewhere. */
const BACK = /^\/console\/projects(\/proj_[0-9a-f]{16})?$/;

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

async function projectsPage(c: C, verifyProblem: VerifyProblem = null, status: 200 | 409 = 200) {
  const db = getDb(c.env.DB);
  const now = c.var.clock.now();
  const [projects, awaiting] = await Promise.all([listProjects(db, { limit: 100 }), unverifiedSwarmTasks(db, 100)]);
  return page(
    c,
    <ConsoleProjectsPage
      viewer={viewerOf(c)}
      projects={projects.projects}
      awaiting={awaiting.map((t) => taskView(t, now))}
      verifyProblem={verifyProblem}
    />,
    status,
  );
}

async function projectPage(
  c: C,
  id: string,
  shown: {
    moveProblem?: FormProblem | null;
    decompositionProblem?: FormProblem | null;
    decompositionDraft?: DecompositionDraft;
    verifyProblem?: VerifyProblem;
  } = {},
  status: 200 | 409 | 422 = 200,
) {
  const project = await projectDetail(getDb(c.env.DB), id, c.var.clock.now());
  return page(
    c,
    <ConsoleProjectPage viewer={viewerOf(c)} project={project} targets={legalTargets(project.status, "manager")} {...shown} />,
    status,
  );
}

/**
 * The decomposition form's rows as the API's body. Rows left wholly empty are skipped; `rows` maps
 * each submitted task back to its row, so a problem at `tasks.1.weight` lands on the row it came from.
 */
function decompositionOfForm(form: Record<string, string>) {
  const tasks: Record<string, unknown>[] = [];
  const rows: number[] = [];
  for (let i = 0; i < DECOMPOSITION_ROWS; i++) {
    const get = (k: string) => (form[`tasks.${i}.${k}`] ?? "").trim();
    const [title, signals, weight, body] = [get("title"), get("signals"), get("weight"), get("body")];
    if (!title && !signals && !weight && !body) continue;
    rows.push(i);
    // A weight that does not read as a number goes on as text, so the schema's message names it.
    const w = weight === "" ? undefined : Number.isFinite(Number(weight)) ? Number(weight) : weight;
    tasks.push({ title, signals, ...(w !== undefined ? { weight: w } : {}), ...(body ? { body } : {}) });
  }
  return { body: { tasks }, rows };
}

/** The refusal's field paths moved from submitted task indexes to the form's rows. */
function onRows(problem: FormProblem, rows: number[]): FormProblem {
  const fields: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(problem.fields)) {
    const m = /^tasks\.(\d+)(\..*)?$/.exec(path);
    const row = m ? rows[Number(m[1])] : undefined;
    // A problem of the whole list (how many, the weights' sum) is the form's.
    const at = m && row !== undefined ? `tasks.${row}${m[2] ?? ""}` : path === "tasks" ? "" : path;
    (fields[at] ??= []).push(...messages);
  }
  return { ...problem, fields };
}

/** Official projects and swarm work in the console: lifecycle moves, a manager's decomposition, verification (docs/projects.md). */
export const consoleProjectsRoutes = new Hono<ConsoleEnv>()
  .get(
    "/projects",
    describe({
      summary: "The projects page",
      responses: { 200: pageDoc("The newest 100 official projects, and the completed swarm tasks that wait for verification") },
    }),
    html,
    viewer,
    (c) => projectsPage(c),
  )
  .get(
    "/projects/:id",
    describe({
      summary: "A project's console page",
      responses: {
        200: pageDoc(
          "The project's state, repository, decomposition and swarm tasks; for a manager the moves it may make, the decomposition form (an approved project) and a verify per completed task",
        ),
      },
      errors: ["not_found"],
    }),
    html,
    viewer,
    validate("param", projectParam),
    (c) => projectPage(c, c.req.valid("param").id),
  )
  .post(
    "/projects/:id/transition",
    describe({
      summary: "Move a project (the project page's form), as `POST /v1/projects/:id/transition` does",
      responses: {
        303: { description: "Moved: back to the project's page" },
        409: pageDoc("Not a move a manager makes from here, or the project moved meanwhile: the page, the problem inline, nothing changed"),
        422: pageDoc("No status named: the page, the problem inline"),
      },
      errors: ["not_found", "illegal_transition", "conflict", "validation_failed"],
    }),
    html,
    manager,
    validate("param", projectParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const db = getDb(c.env.DB);
      try {
        const to = z.enum(PROJECT_STATUSES).safeParse(form.to);
        if (!to.success)
          throw new AppError("validation_failed", "Name the status to move to", { errors: [{ path: "to", message: "pick a status" }] });
        await transitionProject(db, id, to.data, c.var.session.principal.id, c.var.clock.now());
        return c.redirect(`/console/projects/${id}`, 303);
      } catch (err) {
        const refused = refusalOf(err);
        return projectPage(c, id, { moveProblem: formProblem(refused) }, refused.status === 422 ? 422 : 409);
      }
    },
  )
  .post(
    "/projects/:id/decomposition",
    describe({
      summary: "Give an approved project its swarm tasks (the project page's form), as `POST /v1/projects/:id/decomposition` does",
      responses: {
        303: { description: "Decomposed: the project is active, its tasks open; back to its page" },
        409: pageDoc("The project is not approved (or was decomposed meanwhile): the page, the problem inline, nothing changed"),
        422: pageDoc(
          "A task that is not valid, fewer than 2 or more than 10, weights summing above 0.85, a repeated title: the form with the draft, each problem on its row",
        ),
      },
      errors: ["not_found", "conflict", "validation_failed"],
    }),
    html,
    manager,
    validate("param", projectParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const { _csrf, ...draft } = form;
      const { body, rows } = decompositionOfForm(form);
      const db = getDb(c.env.DB);
      try {
        await submitDecomposition(c.env, db, id, body, { kind: "manager", id: c.var.session.principal.id }, c.var.clock.now());
        return c.redirect(`/console/projects/${id}`, 303);
      } catch (err) {
        const refused = refusalOf(err);
        const problem = onRows(formProblem(refused)!, rows);
        return projectPage(c, id, { decompositionProblem: problem, decompositionDraft: draft }, refused.status === 409 ? 409 : 422);
      }
    },
  )
  .post(
    "/swarm/tasks/:id/verify",
    describe({
      summary: "Verify a completed swarm task's work (a verify button), as `POST /v1/swarm/tasks/:id/verify` does",
      responses: {
        303: { description: "Verified (its completer credited once): back to the page the button was on" },
        409: pageDoc("Already verified, or not completed: that page, the problem on the task's row, nothing changed"),
      },
      errors: ["not_found", "conflict"],
    }),
    html,
    manager,
    validate("param", taskParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const back = BACK.test(form.back ?? "") ? form.back! : "/console/projects";
      const db = getDb(c.env.DB);
      try {
        await verifyTask(db, id, c.var.session.principal.id, c.var.clock.now(), await readSection(db, reputationConfig));
        return c.redirect(back, 303);
      } catch (err) {
        const verifyProblem = { taskId: id, problem: formProblem(refusalOf(err))! };
        const projectOf = /^\/console\/projects\/(proj_[0-9a-f]{16})$/.exec(back)?.[1];
        return projectOf ? projectPage(c, projectOf, { verifyProblem }, 409) : projectsPage(c, verifyProblem, 409);
      }
    },
  );
