import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { notFound } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { handoffPacket } from "../../team/handoff";
import { memberStatus } from "../../team/member-status";
import { taskPacket } from "../../team/packet";
import { teamTaskView } from "../../team/views";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { handoffSchema, memberStatusSchema, teamTaskViewSchema } from "../openapi/responses/team";

const taskParam = z.object({ id: z.string().min(1).max(64) });

/** Team-as-Agent (API.md): the member's handoff and the team side of a task. */
export const teamRoutes = new Hono<AppEnv>()
  .post(
    "/handoff",
    describe({
      summary: "A role member stores a packet on its leg",
      responses: { 201: handoffSchema },
      errors: ["wrong_phase", "conflict"],
    }),
    requireAuth({ member: true }),
    validate("json", z.strictObject({ packet: taskPacket })),
    async (c) => {
      const out = await handoffPacket(getDb(c.env.DB), c.var.principal, c.req.valid("json").packet, c.var.clock.now());
      return c.json(out, 201);
    },
  )
  .get(
    "/member",
    describe({ summary: "Whether the member's round and stage still run", responses: { 200: memberStatusSchema } }),
    requireAuth({ member: true }),
    async (c) => c.json(await memberStatus(getDb(c.env.DB), c.var.principal)),
  )
  .get(
    "/tasks/:id",
    describe({
      summary: "The team side of a task: spec, gate, rounds and spawn budget",
      responses: { 200: teamTaskViewSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", taskParam),
    async (c) => {
      const view = await teamTaskView(c.env, getDb(c.env.DB), c.req.valid("param").id);
      if (!view) throw notFound("team task");
      return c.json(view);
    },
  );
