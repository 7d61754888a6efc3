import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import { employeeId, employeeView, findEmployee, getEmployeeView, listEmployees, putEmployee } from "../../tasks/employees";
import { effectiveTeam, employeeWithTeamBody } from "../../team/employee-team";
import { openBody, openConversation } from "../../conversations/messages";
import { employeeEvolution } from "../../evolution/config";
import { toggleBody, toggleEvolution } from "../../evolution/toggle";
import { evolutionView } from "../../evolution/view";
import { actsAsEmployee } from "../../jobs/employee-token";
import type { Principal } from "../../lib/auth";
import { AppError } from "../../lib/errors";
import { matrixAdvice } from "../../eval/advice";
import { goalBody, openGoal } from "../../team/goal-request";
import type { AppEnv } from "../app-env";
import { knowledgeRoutes } from "./knowledge";

const idParam = z.object({ id: employeeId });
/** The employee, with its own `[team]` and `[evolution]` (each stored in its config as written). */
const employeePutBody = employeeWithTeamBody.extend({ evolution: employeeEvolution.optional() });
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: employeeId.optional(),
});

/** The employee registry (API.md "Employees, tasks, dispatch, topology"). */
export const employeesRoutes = new Hono<AppEnv>()
  .put("/:id", requireAuth({ operator: "manager" }), validate("param", idParam), validate("json", employeePutBody), async (c) => {
    const db = getDb(c.env.DB);
    // PUT semantics: a body without `team` (or `evolution`) removes the employee's own section (the global one applies again).
    const { team, evolution, ...body } = c.req.valid("json");
    const { row, created } = await putEmployee(db, c.req.valid("param").id, body, c.var.principal.id, c.var.clock.now(), {
      team,
      evolution,
    });
    return c.json(await withTeam(db, employeeView(row), row, { created }));
  })
  .get("/:id", requireAuth({ operator: "viewer" }), validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const { id } = c.req.valid("param");
    const view = await getEmployeeView(db, id);
    return c.json(await withTeam(db, view, (await findEmployee(db, id))!));
  })
  .get("/", requireAuth({ operator: "viewer" }), validate("query", listQuery), async (c) => {
    return c.json(await listEmployees(getDb(c.env.DB), c.req.valid("query")));
  })
  // A person (or an integration acting for one) starts talking to the employee.
  .post("/:id/conversations", requireAuth({ operator: "manager" }), validate("param", idParam), validate("json", openBody), async (c) => {
    const out = await openConversation(
      getDb(c.env.DB),
      c.req.valid("param").id,
      c.req.valid("json"),
      c.var.principal.id,
      c.var.clock.now(),
    );
    return c.json(out, 201);
  })
  // What the prediction engine and the evolution triggers know of the employee (also the employee's
  // own `evolution_status` MCP tool, through its run's token).
  .get("/:id/evolution", requireAuth({ operator: "viewer", member: true }), validate("param", idParam), async (c) => {
    const { id } = c.req.valid("param");
    assertOperatorOrSelf(c.var.principal, id);
    return c.json(await evolutionView(c.env, getDb(c.env.DB), id, c.var.clock.now()));
  })
  // `evolution_toggle`: a manager, or the employee itself, flips one of its evolution flags.
  .post(
    "/:id/evolution/toggle",
    requireAuth({ operator: "manager", member: true }),
    validate("param", idParam),
    validate("json", toggleBody),
    async (c) => {
      const { id } = c.req.valid("param");
      assertOperatorOrSelf(c.var.principal, id);
      return c.json(await toggleEvolution(getDb(c.env.DB), id, c.req.valid("json"), c.var.principal.id, c.var.clock.now()));
    },
  )
  // A goal for the employee, with the team's gate and spec (Team-as-Agent).
  .post("/:id/goals", requireAuth({ operator: "manager" }), validate("param", idParam), validate("json", goalBody), async (c) => {
    const db = getDb(c.env.DB);
    const now = c.var.clock.now();
    // The capability matrix, when one was measured, advises the team's models and the gate.
    const advice = await matrixAdvice(db, now);
    const out = await openGoal(c.env, db, c.req.valid("param").id, c.req.valid("json"), c.var.principal.id, now, advice);
    return c.json(out, 201);
  })
  // The employee's memory and wiki: a router of their own, under this one (one mount per resource path).
  .route("/", knowledgeRoutes);

/** An operator (its role checked by the route), or the employee's own run acting for itself and no one else. */
function assertOperatorOrSelf(principal: Principal, employeeId: string) {
  if (principal.kind === "operator" || actsAsEmployee(principal, employeeId)) return;
  throw new AppError("forbidden", "This token acts for another employee, or for none");
}

/** The employee's own `team` (as written) and its effective `[team]` beside the other effective config. */
async function withTeam<V extends { effective: Record<string, unknown> }>(
  db: ReturnType<typeof getDb>,
  view: V,
  row: Parameters<typeof effectiveTeam>[1],
  extra: Record<string, unknown> = {},
) {
  const team = row.config?.team;
  const evolution = row.config?.evolution;
  return {
    ...view,
    ...(team !== undefined ? { team } : {}),
    ...(evolution !== undefined ? { evolution } : {}),
    effective: { ...view.effective, team: await effectiveTeam(db, row) },
    ...extra,
  };
}
