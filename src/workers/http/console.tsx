/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { decideApproval, listApprovals } from "../../approvals/broker";
import type { ApprovalView } from "../../approvals/view";
import { employeeSeries } from "../../console/employee-series";
import { employeeConversations, openGoals, recentEvalRuns, recentEvents, recentTasks } from "../../console/lists";
import { goalLoopView } from "../../team/goal-loop";
import { listNotices } from "../../conversations/notices";
import { closeConversation } from "../../conversations/close";
import { openBody, openConversation, sendMessage } from "../../conversations/messages";
import { conversationView, listTurns, requireConversation } from "../../conversations/store";
import { getDb, type Db } from "../../db/client";
import { getAuditSealer } from "../../durable-objects/audit-sealer-rpc";
import { currentMatrix } from "../../eval/current";
import { runView } from "../../eval/run";
import { playbookView, retireBody, retireEntry } from "../../evolution/playbook-ops";
import { soulVersionsView } from "../../evolution/soul-api";
import { evolutionView } from "../../evolution/view";
import { searchMemory } from "../../knowledge/memory";
import { readWikiPage, searchWiki, wikiSlug } from "../../knowledge/wiki";
import { BOOTSTRAP_ADMIN_ID, roleAtLeast } from "../../lib/auth";
import { AppError, notFound } from "../../lib/errors";
import { label } from "../../lib/validation";
import { validate } from "../middleware/validate";
import { employeeId, findEmployee, getEmployeeView, listEmployees } from "../../tasks/employees";
import { pauseEmployee, resumeEmployee, retireEmployee } from "../../tasks/employee-lifecycle";
import { cancelRoundsOfSettledTasks } from "../../team/task-cancel";
import { findTask, taskView } from "../../tasks/view";
import { goalBody, openGoal } from "../../team/goal-request";
import { matrixAdvice } from "../../eval/advice";
import type { GoalDraft } from "../../web/pages/console-goal-form";
import { costByRole } from "../../team/ledger";
import { roleTurnsView, taskKnownToTeam } from "../../team/views";
import { topologyView } from "../../topology/view";
import type { FormProblem } from "../../web/components/common";
import type { Viewer } from "../../web/layout";
import { ApprovalsPage, type DecideAbility } from "../../web/pages/console-approvals";
import { ConversationPage } from "../../web/pages/console-conversation";
import { EmployeePage, EmployeesPage, MemoryPage, WikiPageList } from "../../web/pages/console-employees";
import { LearningPage, type RetireProblem } from "../../web/pages/console-learning";
import { MatrixPage, MatrixRunPage } from "../../web/pages/console-matrix";
import { ActivityPage, AuditPage } from "../../web/pages/console-ops";
import { RolesPage } from "../../web/pages/console-tasks";
import { TopologyPage } from "../../web/pages/console-topology";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { describe, type ResponseDoc } from "../openapi/describe";
import { geneExportSchema } from "../openapi/responses/console";
import { consoleSessionRoutes } from "./console-session";
import { consoleSpendRoutes } from "./console-spend";
import { consoleRoutinesRoutes } from "./console-routines";
import { consoleOrgRoutes, firstRunPanel } from "./console-org";
import { consoleSkillsRoutes } from "./console-skills";
import { consoleRunnersRoutes } from "./console-runners";
import { consoleConfigRoutes } from "./console-config";
import { consoleProjectsRoutes } from "./console-projects";
import { consoleTasksRoutes } from "./console-tasks";
import { consoleOperatorsRoutes } from "./console-operators";
import { withTeam } from "./employees";
import { eventStream } from "./event-stream";
import { formProblem, page, problemStatus, readForm } from "./html";

type C = Context<ConsoleEnv>;

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

/** A zod refusal of a form, as the same problem a JSON route would answer (422 validation_failed). */
function invalid(error: z.ZodError, detail = "The form is invalid"): AppError {
  return new AppError("validation_failed", detail, { errors: error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) });
}

/** Runs a form's action; an AppError comes back as the problem to show inline, anything else is thrown. */
async function attempt<T>(work: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: AppError }> {
  try {
    return { ok: true, value: await work() };
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return { ok: false, error: err };
    throw err;
  }
}

/**
 * A console page in the document: a 200, or a form's page shown again with the problem inline (at
 * the status of its code, as `problemStatus` answers).
 */
const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });

const viewer = requireConsole("viewer");
const manager = requireConsole("manager");
const admin = requireConsole("admin");

const approvalParam = z.object({ id: z.string().min(1).max(64) });
const decideForm = z.object({
  decision: z.enum(["approve", "deny"], { error: "choose Approve or Deny" }),
  note: z.preprocess((v) => (v === "" ? undefined : v), label(1_000).optional()),
});
/** The employee page's status controls. */
const lifecycleForm = z.object({ action: z.enum(["pause", "resume", "retire"]) });
const idParam = z.object({ id: employeeId });
const entryParam = idParam.extend({
  entry_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, "an entry id"),
});
const convParam = z.object({ id: z.string().regex(/^conv_[0-9a-f]{16}$/, "a conversation id") });
const taskParam = z.object({ id: z.string().min(1).max(64) });
const searchQuery = z.object({ q: z.preprocess((v) => (v === "" ? undefined : v), label(500).optional()) });
const streamQuery = z.object({
  type: label(100).optional(),
  subject: label(200).optional(),
  cursor: z.string().regex(/^\d+$/).optional(),
});

async function approvalsPage(
  c: C,
  problem: { approvalId: string; problem: FormProblem; note?: string } | null = null,
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
) {
  const db = getDb(c.env.DB);
  const now = c.var.clock.now();
  const [pending, all] = await Promise.all([
    listApprovals(db, { status: "pending", limit: 100 }, now),
    listApprovals(db, { limit: 60 }, now),
  ]);
  const principal = c.var.session.principal;
  const decide: DecideAbility = !roleAtLeast(principal.role, "manager")
    ? "role"
    : principal.id === BOOTSTRAP_ADMIN_ID
      ? "bootstrap"
      : "yes";
  const decided: ApprovalView[] = all.approvals.filter((a) => a.status !== "pending").slice(0, 40);
  return page(
    c,
    <ApprovalsPage viewer={viewerOf(c)} now={now} pending={pending.approvals} decided={decided} decide={decide} problem={problem} />,
    status,
  );
}

async function employeeOr404(db: Db, id: string) {
  const view = await getEmployeeView(db, id);
  return withTeam(db, view, (await findEmployee(db, id))!);
}

async function employeePage(
  c: C,
  id: string,
  problem: FormProblem | null = null,
  userId?: string,
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
  lifecycleProblem: FormProblem | null = null,
  goal: { problem: FormProblem | null; draft: GoalDraft } | null = null,
) {
  const db = getDb(c.env.DB);
  const [employee, conversations, tasks, series, goals] = await Promise.all([
    employeeOr404(db, id),
    employeeConversations(db, id, 20),
    recentTasks(db, { limit: 20, assignedTo: id }).then((rows) => rows.map(taskView)),
    employeeSeries(db, id, c.var.clock.now()),
    // Each open goal's loop (rounds used and left, the round in flight, the last evaluation); bounded to ten.
    openGoals(db, id, 10).then((rows) => Promise.all(rows.map(async (t) => ({ task: taskView(t), loop: await goalLoopView(db, t) })))),
  ]);
  const canTalk = roleAtLeast(c.var.session.principal.role, "manager");
  return page(
    c,
    <EmployeePage
      viewer={viewerOf(c)}
      employee={employee}
      conversations={conversations}
      tasks={tasks}
      goals={goals}
      series={series}
      canTalk={canTalk}
      problem={problem}
      userId={userId}
      lifecycleProblem={lifecycleProblem}
      goalProblem={goal?.problem}
      goalDraft={goal?.draft}
    />,
    status,
  );
}

async function conversationPage(
  c: C,
  id: string,
  problem: FormProblem | null = null,
  draft?: string,
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
) {
  const db = getDb(c.env.DB);
  const conv = await requireConversation(db, id);
  const [turns, notices] = await Promise.all([listTurns(db, conv.id), listNotices(db, conv.id)]);
  const view = conversationView(conv, turns, notices);
  const canWrite = roleAtLeast(c.var.session.principal.role, "manager");
  return page(c, <ConversationPage viewer={viewerOf(c)} conversation={view} canWrite={canWrite} problem={problem} draft={draft} />, status);
}

/** The learning tab, read as `GET /v1/employees/:id/evolution`, `…/playbook` and `…/soul/versions` read it. */
async function learningPage(c: C, id: string, problem: RetireProblem | null = null, status: 200 | 403 | 404 | 409 | 422 | 429 = 200) {
  const db = getDb(c.env.DB);
  const now = c.var.clock.now();
  const employee = await employeeOr404(db, id);
  const [evolution, playbook, soul] = await Promise.all([
    evolutionView(c.env, db, id, now),
    playbookView(db, id, {}, now),
    soulVersionsView(db, id),
  ]);
  if (!("entries" in playbook)) throw new Error("playbookView without format returns the listing");
  const canRetire = roleAtLeast(c.var.session.principal.role, "manager");
  return page(
    c,
    <LearningPage
      viewer={viewerOf(c)}
      employee={employee}
      evolution={evolution}
      playbook={playbook}
      soul={soul}
      canRetire={canRetire}
      problem={problem}
    />,
    status,
  );
}

/**
 * The operator console (issue 25 item 2). Each page reads through the feature functions its JSON
 * route uses, under the same role that route requires (`requireConsole` is `requireAuth`'s rule
 * for a session), and each form posts to a route that checks the role and the form token again.
 */
export const consoleRoutes = new Hono<ConsoleEnv>()
  // Login and logout first: they work without a session (their own router, mounted here once).
  .route("/", consoleSessionRoutes)
  .route("/", consoleSpendRoutes)
  .route("/", consoleRoutinesRoutes)
  .route("/", consoleOrgRoutes)
  .route("/", consoleRunnersRoutes)
  .route("/", consoleConfigRoutes)
  .route("/", consoleTasksRoutes)
  .route("/", consoleOperatorsRoutes)
  .route("/", consoleProjectsRoutes)
  .route("/", consoleSkillsRoutes)
  .use("*", htmlPages())
  .get(
    "/",
    describe({
      summary: "The console's activity page: the newest events",
      responses: {
        200: pageDoc("The newest 100 events, of a type prefix when `type` is given"),
        422: pageDoc("An invalid `type` filter: the page without events, the problem inline"),
      },
    }),
    viewer,
    validate("query", z.object({ type: z.string().optional() })),
    async (c) => {
      const db = getDb(c.env.DB);
      const raw = c.req.valid("query").type;
      const parsed = z.object({ type: label(100).optional() }).safeParse({ type: raw === "" ? undefined : raw });
      if (!parsed.success) {
        const err = invalid(parsed.error, "The filter is invalid");
        return page(c, <ActivityPage viewer={viewerOf(c)} events={[]} problem={formProblem(err)} />, 422);
      }
      const [events, firstRun] = await Promise.all([recentEvents(db, { typePrefix: parsed.data.type, limit: 100 }), firstRunPanel(c)]);
      return page(c, <ActivityPage viewer={viewerOf(c)} events={events} type={parsed.data.type} firstRun={firstRun} />);
    },
  )
  // The operator feed for the console's pages: `GET /v1/events/stream`, authenticated by the session.
  .get(
    "/events/stream",
    describe({
      summary: "The operator event feed for the console's pages (Server-Sent Events)",
      description: "`GET /v1/events/stream` for a browser: authenticated by the session instead of a bearer token.",
      responses: {
        200: { description: "Events as they land (`event:` its type, `id:` its id, `data:` the event)", type: "text/event-stream" },
      },
      errors: ["validation_failed", "too_many_streams"],
    }),
    viewer,
    validate("query", streamQuery),
    (c) => eventStream(c as unknown as Parameters<typeof eventStream>[0], c.req.valid("query"), false),
  )
  .get(
    "/approvals",
    describe({
      summary: "The approvals page: pending and recently decided",
      responses: { 200: pageDoc("Pending approvals and the last 40 decided") },
    }),
    viewer,
    (c) => approvalsPage(c),
  )
  .post(
    "/approvals/:id/decide",
    describe({
      summary: "Approve or deny a pending approval (the approvals page's form), as a named manager",
      responses: {
        303: { description: "Decided: back to the approval on the approvals page" },
        403: pageDoc("The bootstrap ADMIN_TOKEN's session: the approvals page, the problem on the approval"),
        409: pageDoc("Already decided, expired, or changed meanwhile: the approvals page, the problem on the approval"),
        422: pageDoc("No decision, or an invalid note: the approvals page, the problem on the approval"),
      },
      errors: ["forbidden", "validation_failed", "not_found", "conflict", "already_decided", "approval_expired"],
    }),
    manager,
    validate("param", approvalParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const principal = c.var.session.principal;
      const result = await attempt(async () => {
        // As `POST /v1/approvals/:id/decide`: a named person decides, never the shared bootstrap token.
        if (principal.id === BOOTSTRAP_ADMIN_ID) {
          throw new AppError(
            "forbidden",
            "The bootstrap ADMIN_TOKEN cannot decide approvals; log in with a named manager or admin operator token",
            {
              extra: { reason: "bootstrap_token_not_a_decider" },
            },
          );
        }
        const parsed = decideForm.safeParse(form);
        if (!parsed.success) throw invalid(parsed.error, "The decision is incomplete");
        return decideApproval(
          getDb(c.env.DB),
          id,
          { decision: parsed.data.decision, note: parsed.data.note, operatorId: principal.id, via: "api" },
          c.var.clock.now(),
        );
      });
      if (result.ok) return c.redirect(`/console/approvals#approval-${id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return approvalsPage(c, { approvalId: id, problem: formProblem(result.error)!, note: form.note }, problemStatus(result.error));
    },
  )
  .get(
    "/topology",
    describe({
      summary: "The topology page",
      responses: { 200: pageDoc("Routes, proposals, overrides and observations, as `GET /v1/topology` shows them") },
    }),
    manager,
    async (c) => {
      const view = await topologyView(c.env, getDb(c.env.DB), c.var.clock.now());
      return page(c, <TopologyPage viewer={viewerOf(c)} now={c.var.clock.now()} topology={view} />);
    },
  )
  .get(
    "/employees",
    describe({ summary: "The employees page", responses: { 200: pageDoc("Every employee (up to 500)") } }),
    viewer,
    async (c) => {
      const [{ employees }, firstRun] = await Promise.all([listEmployees(getDb(c.env.DB), { limit: 500 }), firstRunPanel(c)]);
      return page(c, <EmployeesPage viewer={viewerOf(c)} employees={employees} firstRun={firstRun} />);
    },
  )
  .get(
    "/employees/:id",
    describe({
      summary: "An employee's page",
      responses: { 200: pageDoc("The employee, its recent conversations and tasks, and (for a manager) the form to start a conversation") },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", idParam),
    (c) => employeePage(c, c.req.valid("param").id),
  )
  .post(
    "/employees/:id/conversations",
    describe({
      summary: "Start a conversation with an employee (the employee page's form)",
      responses: {
        303: { description: "Started: on to the conversation's page" },
        422: pageDoc("An invalid `user_id`: the employee's page, the problem inline"),
      },
      errors: ["not_found", "validation_failed"],
    }),
    manager,
    validate("param", idParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const result = await attempt(async () => {
        const parsed = openBody.safeParse({ user_id: form.user_id });
        if (!parsed.success) throw invalid(parsed.error, "The conversation cannot start");
        return openConversation(getDb(c.env.DB), id, parsed.data, c.var.session.principal.id, c.var.clock.now());
      });
      if (result.ok) return c.redirect(`/console/conversations/${result.value.conversation_id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return employeePage(c, id, formProblem(result.error), form.user_id, problemStatus(result.error));
    },
  )
  .post(
    "/employees/:id/lifecycle",
    describe({
      summary: "Pause, resume or retire an employee (the employee page's status controls; retire is for admins)",
      responses: {
        303: { description: "Done (or already so): back to the employee's page" },
        403: pageDoc("Retire asked by a manager: the employee's page, the problem inline"),
        409: pageDoc("The employee is retired: the employee's page, the problem inline"),
        422: pageDoc("No such action: the employee's page, the problem inline"),
      },
      errors: ["not_found", "validation_failed", "employee_retired", "forbidden"],
    }),
    manager,
    validate("param", idParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const actor = c.var.session.principal.id;
      const now = c.var.clock.now();
      const db = getDb(c.env.DB);
      const result = await attempt(async () => {
        const parsed = lifecycleForm.safeParse({ action: form.action });
        if (!parsed.success) throw invalid(parsed.error, "Nothing was changed");
        if (parsed.data.action === "pause") return pauseEmployee(c.env, db, id, { actor, reason: "manual", now });
        if (parsed.data.action === "resume") return resumeEmployee(c.env, db, id, { actor, now });
        if (!roleAtLeast(c.var.session.principal.role, "admin"))
          throw new AppError("forbidden", "Retiring an employee needs the admin role");
        return retireEmployee(c.env, db, id, {
          actor,
          now,
          cancelRounds: async (taskIds) => {
            for (const taskId of taskIds) await cancelRoundsOfSettledTasks(c.env, now, taskId);
          },
        });
      });
      if (result.ok) return c.redirect(`/console/employees/${id}#employee-status`, 303);
      if (result.error.code === "not_found") throw result.error;
      return employeePage(c, id, null, undefined, problemStatus(result.error), formProblem(result.error));
    },
  )
  .post(
    "/employees/:id/goals",
    describe({
      summary: "Give an employee a goal (the employee page's form), as `POST /v1/employees/:id/goals` does",
      responses: {
        303: { description: "Opened: on to the goal task's page" },
        409: pageDoc("The employee is retired, or something changed meanwhile: the employee's page with the draft, the problem inline"),
        422: pageDoc("No title, no acceptance criterion, or invalid rounds: the employee's page with the draft, each problem by its field"),
        429: pageDoc("Too many goals too fast: the employee's page with the draft, the problem inline"),
      },
      errors: ["not_found", "validation_failed", "conflict", "employee_retired", "rate_limited"],
    }),
    manager,
    validate("param", idParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const draft: GoalDraft = { title: form.title, acceptance_criteria: form.acceptance_criteria, rounds_left: form.rounds_left };
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const result = await attempt(async () => {
        const criteria = (form.acceptance_criteria ?? "")
          .split(/\r?\n/)
          .map((line) => line.trim())
          .filter(Boolean);
        const rounds = form.rounds_left?.trim();
        const parsed = goalBody.safeParse({
          title: (form.title ?? "").trim(),
          acceptance_criteria: criteria,
          ...(rounds ? { rounds_left: Number(rounds) } : {}),
        });
        if (!parsed.success) throw invalid(parsed.error, "The goal was not given");
        if (criteria.length === 0) {
          throw new AppError("validation_failed", "The goal was not given", {
            errors: [{ path: "acceptance_criteria", message: "at least one criterion, one per line" }],
          });
        }
        // As the JSON route: the capability matrix, when one was measured, advises the team's models and the gate.
        return openGoal(c.env, db, id, parsed.data, c.var.session.principal.id, now, await matrixAdvice(db, now));
      });
      if (result.ok) return c.redirect(`/console/tasks/${result.value.task_id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return employeePage(c, id, null, undefined, problemStatus(result.error), null, { problem: formProblem(result.error), draft });
    },
  )
  .get(
    "/employees/:id/memory",
    describe({
      summary: "An employee's memory, searched",
      responses: { 200: pageDoc("Up to 50 memory entries, matching `q` when given") },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", idParam),
    validate("query", searchQuery),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      const { q } = c.req.valid("query");
      const employee = await employeeOr404(db, id);
      return page(c, <MemoryPage viewer={viewerOf(c)} employee={employee} q={q} entries={await searchMemory(db, id, q, 50)} />);
    },
  )
  .get(
    "/employees/:id/wiki",
    describe({
      summary: "An employee's wiki, searched",
      responses: { 200: pageDoc("Up to 50 wiki pages, matching `q` when given") },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", idParam),
    validate("query", searchQuery),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      const { q } = c.req.valid("query");
      const employee = await employeeOr404(db, id);
      return page(c, <WikiPageList viewer={viewerOf(c)} employee={employee} q={q} pages={await searchWiki(db, id, q, 50)} />);
    },
  )
  .get(
    "/employees/:id/wiki/:slug",
    describe({ summary: "One page of an employee's wiki", responses: { 200: pageDoc("The wiki page") }, errors: ["not_found"] }),
    viewer,
    validate("param", z.object({ id: employeeId, slug: wikiSlug })),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id, slug } = c.req.valid("param");
      const employee = await employeeOr404(db, id);
      return page(c, <WikiPageList viewer={viewerOf(c)} employee={employee} pages={[]} page={await readWikiPage(db, id, slug)} />);
    },
  )
  .get(
    "/employees/:id/learning",
    describe({
      summary: "An employee's learning tab: evolution, playbook and SOUL versions",
      responses: {
        200: pageDoc("Evolution state, the playbook's entries (for a manager, each with a retire form) and the SOUL's versions"),
      },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", idParam),
    (c) => learningPage(c, c.req.valid("param").id),
  )
  // `GET /v1/employees/:id/playbook?format=gene` for a browser (the session instead of a bearer token), as a download.
  .get(
    "/employees/:id/playbook/export",
    describe({
      summary: "Download an employee's playbook as GEP genes",
      description: "`GET /v1/employees/:id/playbook?format=gene` for a browser, as an attachment (`<id>-playbook-genes.json`).",
      responses: { 200: geneExportSchema },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", idParam),
    async (c) => {
      const { id } = c.req.valid("param");
      const genes = await playbookView(getDb(c.env.DB), id, { format: "gene" }, c.var.clock.now());
      c.header("Content-Disposition", `attachment; filename="${id}-playbook-genes.json"`);
      return c.json(genes);
    },
  )
  .post(
    "/employees/:id/playbook/:entry_id/retire",
    describe({
      summary: "Retire a playbook entry (the learning tab's form)",
      responses: {
        303: { description: "Retired: back to the entry on the learning tab" },
        409: pageDoc("Already retired, or the playbook kept changing: the learning tab, the problem on the entry"),
        422: pageDoc("No reason, or the playbook refused the change: the learning tab, the problem on the entry"),
      },
      errors: ["not_found", "validation_failed", "conflict"],
    }),
    manager,
    validate("param", entryParam),
    async (c) => {
      const { id, entry_id } = c.req.valid("param");
      const form = await readForm(c);
      const result = await attempt(async () => {
        const parsed = retireBody.safeParse({ reason: form.reason });
        if (!parsed.success) throw invalid(parsed.error, "The entry cannot be retired");
        return retireEntry(getDb(c.env.DB), id, entry_id, parsed.data, c.var.session.principal.id, c.var.clock.now());
      });
      if (result.ok) return c.redirect(`/console/employees/${id}/learning#entry-${entry_id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return learningPage(
        c,
        id,
        { entryId: entry_id, problem: formProblem(result.error)!, reason: form.reason },
        problemStatus(result.error),
      );
    },
  )
  .get(
    "/conversations/:id",
    describe({
      summary: "A conversation's page",
      responses: { 200: pageDoc("The conversation and its turns, and (for a manager) the forms to write and to close") },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", convParam),
    (c) => conversationPage(c, c.req.valid("param").id),
  )
  .post(
    "/conversations/:id/messages",
    describe({
      summary: "Send a message in a conversation (the conversation page's form)",
      responses: {
        303: { description: "Sent (the employee's reply is pending): back to the conversation" },
        409: pageDoc("The conversation is closed, a reply is pending, or its employee is gone: the conversation, the problem inline"),
        422: pageDoc("No `content`: the conversation, the problem inline"),
      },
      errors: ["not_found", "validation_failed", "conflict"],
    }),
    manager,
    validate("param", convParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const result = await attempt(async () => {
        const parsed = z.object({ content: z.string() }).safeParse({ content: form.content });
        if (!parsed.success) throw invalid(parsed.error, "The message is invalid");
        return sendMessage(c.env, getDb(c.env.DB), id, { content: parsed.data.content }, c.var.session.principal.id, c.var.clock.now());
      });
      if (result.ok) return c.redirect(`/console/conversations/${id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return conversationPage(c, id, formProblem(result.error), form.content, problemStatus(result.error));
    },
  )
  .post(
    "/conversations/:id/close",
    describe({
      summary: "Close a conversation (the conversation page's form)",
      responses: {
        303: { description: "Closed (or closed already): back to the conversation" },
        409: pageDoc("Its user model kept changing: the conversation, the problem inline"),
      },
      errors: ["not_found", "conflict"],
    }),
    manager,
    validate("param", convParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const result = await attempt(() => closeConversation(c.env, id, "closed_by_request", c.var.session.principal.id, c.var.clock.now()));
      if (result.ok) return c.redirect(`/console/conversations/${id}`, 303);
      if (result.error.code === "not_found") throw result.error;
      return conversationPage(c, id, formProblem(result.error), undefined, problemStatus(result.error));
    },
  )
  // The tasks page and a task's page are console-tasks.tsx's (with their forms); the roles tab stays here.
  .get(
    "/tasks/:id/roles",
    describe({
      summary: "A team task's role turns and cost by role",
      responses: { 200: pageDoc("The role turns and the cost by role") },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", taskParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      if (!(await taskKnownToTeam(db, id))) throw notFound(`task ${id}`);
      const [roles, cost, task] = await Promise.all([roleTurnsView(db, id), costByRole(db, id), findTask(db, id)]);
      return page(c, <RolesPage viewer={viewerOf(c)} taskId={id} title={task?.title ?? id} roles={roles} cost={cost} />);
    },
  )
  .get(
    "/matrix",
    describe({ summary: "The capability matrix page", responses: { 200: pageDoc("The current matrix and the last 20 eval runs") } }),
    viewer,
    async (c) => {
      const db = getDb(c.env.DB);
      const [current, runs] = await Promise.all([currentMatrix(db), recentEvalRuns(db, 20)]);
      return page(c, <MatrixPage viewer={viewerOf(c)} current={current} runs={runs} />);
    },
  )
  .get(
    "/matrix/:run_id",
    describe({
      summary: "An eval run's page",
      responses: { 200: pageDoc("The run's progress, and its report when done") },
      errors: ["not_found"],
    }),
    viewer,
    validate("param", z.object({ run_id: z.string().regex(/^evr_[0-9a-f]{16}$/, "a run id") })),
    async (c) => {
      return page(c, <MatrixRunPage viewer={viewerOf(c)} run={await runView(getDb(c.env.DB), c.req.valid("param").run_id)} />);
    },
  )
  .get(
    "/audit",
    describe({ summary: "The audit trail's page", responses: { 200: pageDoc("The audit sealer's status") } }),
    viewer,
    async (c) => {
      return page(c, <AuditPage viewer={viewerOf(c)} status={await getAuditSealer(c.env).status()} />);
    },
  );
