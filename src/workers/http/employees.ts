import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../../lib/auth";
import { validate } from "../../lib/validation";
import { employeeBody, employeeId, employeeView, getEmployeeView, listEmployees, putEmployee } from "../../tasks/employees";
import type { AppEnv } from "../app-env";

const idParam = z.object({ id: employeeId });
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: employeeId.optional(),
});

/** The employee registry (API.md "Employees, tasks, dispatch, topology"). */
export const employeesRoutes = new Hono<AppEnv>()
  .put("/:id", requireAuth({ operator: "manager" }), validate("param", idParam), validate("json", employeeBody), async (c) => {
    const { row, created } = await putEmployee(
      getDb(c.env.DB),
      c.req.valid("param").id,
      c.req.valid("json"),
      c.var.principal.id,
      c.var.clock.now(),
    );
    return c.json({ ...employeeView(row), created });
  })
  .get("/:id", requireAuth({ operator: "viewer" }), validate("param", idParam), async (c) => {
    return c.json(await getEmployeeView(getDb(c.env.DB), c.req.valid("param").id));
  })
  .get("/", requireAuth({ operator: "viewer" }), validate("query", listQuery), async (c) => {
    return c.json(await listEmployees(getDb(c.env.DB), c.req.valid("query")));
  });
