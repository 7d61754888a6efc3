/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { recentTasks } from "../../console/lists";
import { getDb } from "../../db/client";
import { AppError, notFound } from "../../lib/errors";
import { newTaskBody } from "../../tasks/create-task";
import { listEmployees } from "../../tasks/employees";
import { findTask, taskView } from "../../tasks/view";
import { goalLoopView } from "../../team/goal-loop";
import { teamFieldsOfTask } from "../../team/views";
import type { FormProblem } from "../../web/components/common";
import type { Viewer } from "../../web/layout";
import type { TaskDraft } from "../../web/pages/console-task-form";
import { TaskPage, TasksPage } from "../../web/pages/console-tasks";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { formProblem, page, problemStatus, readForm } from "./html";
import { attachmentResponse, openTask, settleAndRelease } from "./tasks";
import { archivedPath } from "../../jobs/attachments-job";
import { attachmentsOfTask } from "../../team/attachments";

type C = Context<ConsoleEnv>;

const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });
// Mounted by console.tsx before its own `htmlPages()`, so each route takes the page middleware here.
const html = htmlPages();
const viewer = requireConsole("viewer");
const manager = requireConsole("manager");
const taskParam = z.object({ id: z.string().min(1).max(64) });

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

/** Runs a form's action; an AppError below 500 comes back as the problem to show inline, anything else is thrown. */
async function attempt<T>(work: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: AppError }> {
  try {
    return { ok: true, value: await work() };
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return { ok: false, error: err };
    throw err;
  }
}

async function tasksPage(c: C, shown: { problem?: FormProblem | null; draft?: TaskDraft } = {}, status: 200 | 409 | 422 | 429 = 200) {
  const db = getDb(c.env.DB);
  const [tasks, staff] = await Promise.all([recentTasks(db, { limit: 100 }), listEmployees(db, { limit: 500 })]);
  const employees = staff.employees
    .filter((e) => e.status !== "retired")
    .map((e) => ({ employee_id: e.employee_id, name: e.status === "paused" ? `${e.name}, paused` : e.name }));
  return page(c, <TasksPage viewer={viewerOf(c)} tasks={tasks.map(taskView)} employees={employees} {...shown} />, status);
}

async function taskPage(c: C, id: string, cancelProblem: FormProblem | null = null, status: 200 | 409 = 200) {
  const db = getDb(c.env.DB);
  const task = await findTask(db, id);
  if (!task) throw notFound("task");
  const attachments = await attachmentsOfTask(db, task.id);
  const view = {
    ...taskView(task),
    goal_loop: await goalLoopView(db, task),
    ...(await teamFieldsOfTask(c.env, db, task.id)),
    ...(attachments ? { attachments } : {}),
  };
  return page(c, <TaskPage viewer={viewerOf(c)} task={view} cancelProblem={cancelProblem} />, status);
}

/** The form's fields as `POST /v1/tasks`'s body: criteria one per line, tags comma-separated, blanks left out. */
function bodyOfForm(form: Record<string, string>) {
  const lines = (text: string | undefined, sep: RegExp) =>
    (text ?? "")
      .split(sep)
      .map((s) => s.trim())
      .filter(Boolean);
  const rounds = form.rounds_left?.trim();
  return {
    title: (form.title ?? "").trim(),
    mode: form.mode || "goal",
    assignee: form.assignee ?? "",
    tags: lines(form.tags, /,/),
    priority: form.priority || "medium",
    acceptance_criteria: lines(form.acceptance_criteria, /\r?\n/),
    manual: form.manual === "on",
    ...(rounds ? { rounds_left: Number(rounds) } : {}),
  };
}

/** Giving the company work from the browser, and taking it back: the tasks page's form and the task page's cancel (docs/console.md). */
export const consoleTasksRoutes = new Hono<ConsoleEnv>()
  .get(
    "/tasks",
    describe({
      summary: "The tasks page",
      responses: { 200: pageDoc("The newest 100 tasks, and (for a manager) the new-task form") },
    }),
    html,
    viewer,
    (c) => tasksPage(c),
  )
  .post(
    "/tasks",
    describe({
      summary:
        "Create a task (the tasks page's form), as `POST /v1/tasks` does: routed by the dispatch policy, the goal loop started unless manual",
      responses: {
        303: { description: "Created: on to the task's page" },
        409: pageDoc("The employee is retired, or the round-robin turn kept moving: the form with the draft, the problem inline"),
        422: pageDoc("An invalid field (no title, no employee, bad rounds or tags): the form with the draft, each problem by its field"),
        429: pageDoc("The employee's dispatch window is full: the form with the draft, the problem inline"),
      },
      errors: ["validation_failed", "conflict", "employee_retired", "rate_limited"],
    }),
    html,
    manager,
    async (c) => {
      const form = await readForm(c);
      const draft: TaskDraft = {
        title: form.title,
        acceptance_criteria: form.acceptance_criteria,
        assignee: form.assignee,
        mode: form.mode,
        priority: form.priority,
        tags: form.tags,
        rounds_left: form.rounds_left,
        manual: form.manual,
      };
      const result = await attempt(async () => {
        const body = bodyOfForm(form);
        const parsed = newTaskBody.safeParse(body);
        if (!parsed.success) {
          throw new AppError("validation_failed", "The task was not created", {
            errors: parsed.error.issues.map((i) => {
              const path = i.path.join(".");
              return { path, message: path === "assignee" && !body.assignee ? "choose the employee it is addressed to" : i.message };
            }),
          });
        }
        return openTask(c.env, getDb(c.env.DB), parsed.data, c.var.session.principal.id, c.var.clock.now());
      });
      if (result.ok) return c.redirect(`/console/tasks/${result.value.task_id}`, 303);
      const status = problemStatus(result.error);
      return tasksPage(c, { problem: formProblem(result.error), draft }, status === 409 || status === 429 ? status : 422);
    },
  )
  .get(
    "/tasks/:id",
    describe({
      summary: "A task's page",
      responses: {
        200: pageDoc(
          "The task, its goal loop and its team fields, as `GET /v1/tasks/:id` shows them; for a manager, on an open task, the cancel form",
        ),
      },
      errors: ["not_found"],
    }),
    html,
    viewer,
    validate("param", taskParam),
    (c) => taskPage(c, c.req.valid("param").id),
  )
  // `GET /v1/tasks/:id/attachment` for a browser (the session instead of a bearer token), as a download.
  .get(
    "/tasks/:id/attachment",
    describe({
      summary: "Download a file an accepted team goal archived into the employee's attachments",
      description: "`GET /v1/tasks/:id/attachment?path=` for a browser: only a path the task's archive lists.",
      responses: { 200: { description: "The file's bytes as archived", type: "application/octet-stream" } },
      errors: ["not_found"],
    }),
    html,
    viewer,
    validate("param", taskParam),
    validate("query", z.strictObject({ path: archivedPath })),
    (c) => attachmentResponse(c.env, c.req.valid("param").id, c.req.valid("query").path),
  )
  .post(
    "/tasks/:id/cancel",
    describe({
      summary: "Cancel a goal (the task page's form): settle the open task as `failed`, as `POST /v1/tasks/:id/settle` does",
      description:
        "Records `task.cancelled` (by whom) with the settle, cancels the task's live round and gives the employee's slot to its next waiting task.",
      responses: {
        303: { description: "Cancelled: back to the task's page" },
        409: pageDoc("The task is settled already: the task's page, the problem inline, nothing changed"),
      },
      errors: ["not_found", "already_settled"],
    }),
    html,
    manager,
    validate("param", taskParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const actor = c.var.session.principal.id;
      const now = c.var.clock.now();
      const result = await attempt(async () => {
        const task = await findTask(getDb(c.env.DB), id);
        if (!task) throw notFound("task");
        // The same settle again would be a no-op 200 for the API; a person asking to cancel a settled task is told it is settled.
        if (task.status !== "assigned") throw new AppError("already_settled", `task ${id} is already ${task.status}`);
        return settleAndRelease(c.env, id, { status: "failed" }, actor, now, [
          { type: "task.cancelled", subject: id, payload: { task_id: id, by: actor, via: "console" } },
        ]);
      });
      if (result.ok) return c.redirect(`/console/tasks/${id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return taskPage(c, id, formProblem(result.error), 409);
    },
  );
