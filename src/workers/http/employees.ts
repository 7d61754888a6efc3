import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import { employeeId, employeeView, findEmployee, getEmployeeView, listEmployees, putEmployee } from "../../tasks/employees";
import { effectiveTeam, employeeWithTeamBody } from "../../team/employee-team";
import { openBody, openConversation } from "../../conversations/messages";
import { employeeEvolution } from "../../evolution/config";
import { contractSchema } from "../../evolution/contract";
import { toggleBody, toggleEvolution } from "../../evolution/toggle";
import { evolutionView } from "../../evolution/view";
import { actsAsEmployee } from "../../jobs/employee-token";
import type { Principal } from "../../lib/auth";
import { AppError } from "../../lib/errors";
import { matrixAdvice } from "../../eval/advice";
import { goalBody, openGoal } from "../../team/goal-request";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { conversationOpenedSchema } from "../openapi/responses/conversations";
import {
  employeeLifecycleSchema,
  employeePageSchema,
  employeePutSchema,
  employeeRetiredSchema,
  employeeSchema,
} from "../openapi/responses/employees";
import { pauseEmployee, resumeEmployee, retireEmployee } from "../../tasks/employee-lifecycle";
import { cancelRoundsOfSettledTasks } from "../../team/task-cancel";
import { evolutionToggleSchema, evolutionViewSchema } from "../openapi/responses/employees-evolution";
import { goalAnswerSchema } from "../openapi/responses/team";
import { knowledgeRoutes } from "./knowledge";
import { playbookRoutes } from "./playbook";
import { skillRoutes } from "./skills";
import { soulRoutes } from "./soul";

const idParam = z.object({ id: employeeId });
/** Evolution flags an employee's own token may not flip (issue 23 item 1). */
const SOUL_PATH_KEYS: ReadonlySet<string> = new Set(["legacy_soul_evolution", "can_modify_own_soul"]);
/**
 * The employee, with its own `[team]`, `[evolution]` and `[contract]` (issue 23: must_not,
 * must_always, max_tool_calls_per_turn), each stored in its config as written.
 */
export const employeePutBody = employeeWithTeamBody.extend({
  evolution: employeeEvolution.optional(),
  contract: contractSchema.optional(),
});
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: employeeId.optional(),
});

/** The employee registry (API.md "Employees, tasks, dispatch, topology"). */
export const employeesRoutes = new Hono<AppEnv>()
  .put(
    "/:id",
    describe({
      summary: "Create or replace an employee (with its own [team], [evolution] and [contract])",
      responses: { 200: employeePutSchema },
      errors: ["conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", employeePutBody),
    async (c) => {
      const db = getDb(c.env.DB);
      // PUT semantics: a body without `team` (or `evolution`) removes the employee's own section (the global one applies again).
      const { team, evolution, contract, ...body } = c.req.valid("json");
      const { row, created } = await putEmployee(db, c.req.valid("param").id, body, c.var.principal.id, c.var.clock.now(), {
        team,
        evolution,
        contract,
      });
      return c.json(await withTeam(db, employeeView(row), row, { created }));
    },
  )
  .get(
    "/:id",
    describe({
      summary: "Read an employee, its direct reports and its effective config (with the effective [team])",
      responses: { 200: employeeSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      const view = await getEmployeeView(db, id);
      return c.json(await withTeam(db, view, (await findEmployee(db, id))!));
    },
  )
  .get(
    "/",
    describe({ summary: "List employees, ordered by id", responses: { 200: employeePageSchema } }),
    requireAuth({ operator: "viewer" }),
    validate("query", listQuery),
    async (c) => {
      return c.json(await listEmployees(getDb(c.env.DB), c.req.valid("query")));
    },
  )
  // A person (or an integration acting for one) starts talking to the employee.
  .post(
    "/:id/conversations",
    describe({
      summary: "Open a conversation with the employee for a user",
      responses: { 201: conversationOpenedSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", openBody),
    async (c) => {
      const out = await openConversation(
        getDb(c.env.DB),
        c.req.valid("param").id,
        c.req.valid("json"),
        c.var.principal.id,
        c.var.clock.now(),
      );
      return c.json(out, 201);
    },
  )
  // What the prediction engine and the evolution triggers know of the employee (also the employee's
  // own `evolution_status` MCP tool, through its run's token).
  .get(
    "/:id/evolution",
    describe({
      summary: "The employee's evolution: config, thresholds, counters, triggers, AEE rounds, SOUL and GVU rounds",
      responses: { 200: evolutionViewSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer", member: true }),
    validate("param", idParam),
    async (c) => {
      const { id } = c.req.valid("param");
      assertOperatorOrSelf(c.var.principal, id);
      return c.json(await evolutionView(c.env, getDb(c.env.DB), id, c.var.clock.now()));
    },
  )
  // `evolution_toggle`: a manager, or the employee itself, flips one of its evolution flags.
  .post(
    "/:id/evolution/toggle",
    describe({
      summary: "Flip one of the employee's own evolution flags (a manager, or the employee's own run)",
      responses: { 200: evolutionToggleSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager", member: true }),
    validate("param", idParam),
    validate("json", toggleBody),
    async (c) => {
      const { id } = c.req.valid("param");
      assertOperatorOrSelf(c.var.principal, id);
      const { key } = c.req.valid("json");
      // Seed 003 §12.2: the SOUL is read-only to the employee on the AEE path. The switch that puts its
      // SOUL back in the GVU updater's hands is an operator's, never the employee's own run's.
      if (c.var.principal.kind !== "operator" && SOUL_PATH_KEYS.has(key))
        throw new AppError("forbidden", `'${key}' decides who may write this employee's SOUL: only an operator sets it`, {
          extra: { reason: "soul_path_operator_only" },
        });
      return c.json(await toggleEvolution(getDb(c.env.DB), id, c.req.valid("json"), c.var.principal.id, c.var.clock.now()));
    },
  )
  // The lifecycle: pause (nothing of its is leased; queued work waits), resume, retire (history kept).
  .post(
    "/:id/pause",
    describe({
      summary: "Pause an employee: its queued jobs are held and none is leased; work in flight finishes",
      responses: { 200: employeeLifecycleSchema },
      errors: ["not_found", "employee_retired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    async (c) => {
      const out = await pauseEmployee(c.env, getDb(c.env.DB), c.req.valid("param").id, {
        actor: c.var.principal.id,
        reason: "manual",
        now: c.var.clock.now(),
      });
      return c.json({ ...employeeView(out.row), changed: out.changed, inboxes_synced: out.inboxes_synced });
    },
  )
  .post(
    "/:id/resume",
    describe({
      summary: "Resume a paused employee (a budget pause is lifted for the rest of the month); its held jobs are leased again in order",
      responses: { 200: employeeLifecycleSchema },
      errors: ["not_found", "employee_retired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    async (c) => {
      const out = await resumeEmployee(c.env, getDb(c.env.DB), c.req.valid("param").id, {
        actor: c.var.principal.id,
        now: c.var.clock.now(),
      });
      return c.json({ ...employeeView(out.row), changed: out.changed, inboxes_synced: out.inboxes_synced });
    },
  )
  .post(
    "/:id/retire",
    describe({
      summary: "Retire an employee: history kept, untaken jobs end, open tasks go back to a person",
      responses: { 200: employeeRetiredSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "admin" }),
    validate("param", idParam),
    async (c) => {
      const now = c.var.clock.now();
      const out = await retireEmployee(c.env, getDb(c.env.DB), c.req.valid("param").id, {
        actor: c.var.principal.id,
        now,
        cancelRounds: async (taskIds) => {
          for (const taskId of taskIds) await cancelRoundsOfSettledTasks(c.env, now, taskId);
        },
      });
      return c.json({
        ...employeeView(out.row),
        changed: out.changed,
        inboxes_synced: out.inboxes_synced,
        withdrawn_jobs: out.withdrawn_jobs,
        handed_back_tasks: out.handed_back_tasks,
      });
    },
  )
  // A goal for the employee, with the team's gate and spec (Team-as-Agent).
  .post(
    "/:id/goals",
    describe({
      summary: "Give the employee a goal: a goal task, the team gate and spec, and the loop's first round",
      responses: { 201: goalAnswerSchema },
      errors: ["not_found", "conflict", "rate_limited", "employee_retired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", goalBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      // The capability matrix, when one was measured, advises the team's models and the gate.
      const advice = await matrixAdvice(db, now);
      const out = await openGoal(c.env, db, c.req.valid("param").id, c.req.valid("json"), c.var.principal.id, now, advice);
      return c.json(out, 201);
    },
  )
  // The employee's memory and wiki, its playbook and its SOUL: routers of their own, under this one
  // (one mount per resource path).
  .route("/", knowledgeRoutes)
  .route("/", playbookRoutes)
  .route("/", soulRoutes)
  .route("/", skillRoutes);

/** An operator (its role checked by the route), or the employee's own run acting for itself and no one else. */
function assertOperatorOrSelf(principal: Principal, employeeId: string) {
  if (principal.kind === "operator" || actsAsEmployee(principal, employeeId)) return;
  throw new AppError("forbidden", "This token acts for another employee, or for none");
}

/** The employee's own `team` (as written) and its effective `[team]` beside the other effective config. */
export async function withTeam<V extends { effective: Record<string, unknown> }>(
  db: ReturnType<typeof getDb>,
  view: V,
  row: Parameters<typeof effectiveTeam>[1],
  extra: Record<string, unknown> = {},
) {
  const team = row.config?.team;
  const evolution = row.config?.evolution;
  const contract = row.config?.contract;
  return {
    ...view,
    ...(team !== undefined ? { team } : {}),
    ...(evolution !== undefined ? { evolution } : {}),
    ...(contract !== undefined ? { contract } : {}),
    effective: { ...view.effective, team: await effectiveTeam(db, row) },
    ...extra,
  };
}
