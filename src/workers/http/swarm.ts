import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { readSection } from "../../lib/config";
import { keysetPageQuery } from "../../lib/paging";
import { validate } from "../middleware/validate";
import { getActiveNode } from "../../nodes/registry";
import { reputationConfig } from "../../nodes/reputation-config";
import { projectsConfig } from "../../projects/config";
import {
  claimTask,
  completeTask,
  completionInput,
  getTask,
  listTasks,
  releaseTask,
  taskCursor,
  taskId,
  taskListQuery,
  taskView,
  verifyTask,
} from "../../projects/swarm-tasks";
import type { AppEnv } from "../app-env";
import { nodeOf } from "./projects";
import { describe } from "../openapi/describe";
import { swarmTaskPageSchema, swarmTaskSchema } from "../openapi/responses/swarm";

const idParam = z.object({ id: taskId });

/**
 * Swarm tasks (council tasks and project tasks): public reads; nodes claim, release and complete
 * (a suspended node's writes are `403`, `reason: node_suspended`); a manager verifies a completion.
 */
export const swarmRoutes = new Hono<AppEnv>()
  .get(
    "/tasks",
    describe({ summary: "List swarm tasks, newest first", responses: { 200: swarmTaskPageSchema } }),
    validate("query", keysetPageQuery(taskCursor).extend(taskListQuery.shape)),
    async (c) => {
      const { status, project_id, limit, cursor } = c.req.valid("query");
      const q = { limit, ...(status ? { status } : {}), ...(project_id ? { project_id } : {}), ...(cursor ? { cursor } : {}) };
      return c.json(await listTasks(getDb(c.env.DB), q, c.var.clock.now()));
    },
  )
  .get(
    "/tasks/:id",
    describe({ summary: "Read one swarm task", responses: { 200: swarmTaskSchema }, errors: ["not_found"] }),
    validate("param", idParam),
    async (c) => c.json(taskView(await getTask(getDb(c.env.DB), c.req.valid("param").id), c.var.clock.now())),
  )
  .post(
    "/tasks/:id/claim",
    describe({
      summary: "Claim a swarm task, as a node (a repeat claim by its holder answers the task)",
      responses: { 200: swarmTaskSchema },
      errors: ["forbidden", "not_found", "not_eligible", "conflict"],
    }),
    requireAuth({ node: true }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const [projects, reputation] = await Promise.all([readSection(db, projectsConfig), readSection(db, reputationConfig)]);
      const task = await claimTask(db, c.req.valid("param").id, nodeOf(c.var.principal), now, projects, reputation);
      return c.json(taskView(task, now));
    },
  )
  .post(
    "/tasks/:id/release",
    describe({
      summary: "Give a claimed task back, as its claimant",
      responses: { 200: swarmTaskSchema },
      errors: ["forbidden", "not_found", "conflict"],
    }),
    requireAuth({ node: true }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const node = await getActiveNode(db, nodeOf(c.var.principal));
      return c.json(taskView(await releaseTask(db, c.req.valid("param").id, node.id, now), now));
    },
  )
  .post(
    "/tasks/:id/complete",
    describe({
      summary: "Complete a claimed task with a summary (and, for a project task, its contribution commit), as its claimant",
      responses: { 200: swarmTaskSchema },
      errors: ["forbidden", "not_found", "conflict"],
    }),
    requireAuth({ node: true }),
    validate("param", idParam),
    validate("json", completionInput),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const task = await completeTask(
        db,
        c.req.valid("param").id,
        nodeOf(c.var.principal),
        c.req.valid("json"),
        now,
        await readSection(db, reputationConfig),
      );
      return c.json(taskView(task, now));
    },
  )
  // Verified work for a task with no commit to check (a council task): credits its completer once.
  .post(
    "/tasks/:id/verify",
    describe({
      summary: "Verify a completed task's work, as a manager (credits its completer once)",
      responses: { 200: swarmTaskSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", z.strictObject({})),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const task = await verifyTask(db, c.req.valid("param").id, c.var.principal.id, now, await readSection(db, reputationConfig));
      return c.json(taskView(task, now));
    },
  );
