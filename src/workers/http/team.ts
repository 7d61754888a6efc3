import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../../lib/auth";
import { notFound } from "../../lib/errors";
import { validate } from "../../lib/validation";
import { employeeId } from "../../tasks/employees";
import { matrixAdvice } from "../../eval/advice";
import { goalBody, openGoal } from "../../team/goal-request";
import { costByRole } from "../../team/ledger";
import { handoffPacket } from "../../team/handoff";
import { memberStatus } from "../../team/member-status";
import { taskPacket } from "../../team/packet";
import { roleTurnsView, taskKnownToTeam, teamTaskView } from "../../team/views";
import type { AppEnv } from "../app-env";

const taskParam = z.object({ id: z.string().min(1).max(64) });

/** Team-as-Agent (API.md): the member's handoff and the team side of a task. */
export const teamRoutes = new Hono<AppEnv>()
  .post("/handoff", requireAuth({ member: true }), validate("json", z.strictObject({ packet: taskPacket })), async (c) => {
    const out = await handoffPacket(getDb(c.env.DB), c.var.principal, c.req.valid("json").packet, c.var.clock.now());
    return c.json(out, 201);
  })
  .get("/member", requireAuth({ member: true }), async (c) => c.json(await memberStatus(getDb(c.env.DB), c.var.principal)))
  .get("/tasks/:id", requireAuth({ operator: "viewer" }), validate("param", taskParam), async (c) => {
    const view = await teamTaskView(c.env, getDb(c.env.DB), c.req.valid("param").id);
    if (!view) throw notFound("team task");
    return c.json(view);
  });

/** `GET /v1/tasks/:id/roles`: the roles tab. Mounted beside the tasks router on the same prefix. */
export const teamTaskRoutes = new Hono<AppEnv>().get(
  "/:id/roles",
  requireAuth({ operator: "viewer" }),
  validate("param", taskParam),
  async (c) => {
    const db = getDb(c.env.DB);
    const { id } = c.req.valid("param");
    if (!(await taskKnownToTeam(db, id))) throw notFound(`task ${id}`);
    return c.json(await roleTurnsView(db, id));
  },
);

/** `POST /v1/employees/:id/goals`: a goal for an employee, with the team's gate and spec. Mounted beside the employees router. */
export const teamEmployeeRoutes = new Hono<AppEnv>().post(
  "/:id/goals",
  requireAuth({ operator: "manager" }),
  validate("param", z.object({ id: employeeId })),
  validate("json", goalBody),
  async (c) => {
    const db = getDb(c.env.DB);
    const now = c.var.clock.now();
    // The capability matrix, when one was measured, advises the team's models and the gate.
    const advice = await matrixAdvice(db, now);
    const out = await openGoal(c.env, db, c.req.valid("param").id, c.req.valid("json"), c.var.principal.id, now, advice);
    return c.json(out, 201);
  },
);

/** `GET /v1/cost/by-role`: spend per role and model; unknown usage is reported as unknown. */
export const costRoutes = new Hono<AppEnv>().get(
  "/by-role",
  requireAuth({ operator: "viewer" }),
  validate("query", z.object({ episode_id: z.string().min(1).max(64).optional() })),
  async (c) => {
    const episode = c.req.valid("query").episode_id;
    return c.json({ ...(episode ? { episode_id: episode } : {}), by_role: await costByRole(getDb(c.env.DB), episode) });
  },
);
