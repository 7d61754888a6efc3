import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../../lib/auth";
import { validate } from "../../lib/validation";
import { employeeId, employeeView, findEmployee, getEmployeeView, listEmployees, putEmployee } from "../../tasks/employees";
import { effectiveTeam, employeeWithTeamBody } from "../../team/employee-team";
import type { AppEnv } from "../app-env";

const idParam = z.object({ id: employeeId });
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: employeeId.optional(),
});

/** The employee registry (API.md "Employees, tasks, dispatch, topology"). */
export const employeesRoutes = new Hono<AppEnv>()
  .put("/:id", requireAuth({ operator: "manager" }), validate("param", idParam), validate("json", employeeWithTeamBody), async (c) => {
    const db = getDb(c.env.DB);
    // PUT semantics: a body without `team` removes the employee's own [team] (it cascades again).
    const { team, ...body } = c.req.valid("json");
    const { row, created } = await putEmployee(db, c.req.valid("param").id, body, c.var.principal.id, c.var.clock.now(), { team });
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
  });

/** The employee's own `team` (as written) and its effective `[team]` beside the other effective config. */
async function withTeam<V extends { effective: Record<string, unknown> }>(
  db: ReturnType<typeof getDb>,
  view: V,
  row: Parameters<typeof effectiveTeam>[1],
  extra: Record<string, unknown> = {},
) {
  const team = row.config?.team;
  return {
    ...view,
    ...(team !== undefined ? { team } : {}),
    effective: { ...view.effective, team: await effectiveTeam(db, row) },
    ...extra,
  };
}
