import { Hono } from "hono";
import * as z from "zod";
import { getDb, type Db } from "../../db/client";
import type { Env } from "../../env";
import type { NewEvent } from "../../lib/events";
import { requireAuth } from "../middleware/require-auth";
import { notFound } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { createTask, newTaskBody, type NewTask } from "../../tasks/create-task";
import { settleBody, settleTask, type SettleBody } from "../../tasks/settle";
import { findTask, taskView } from "../../tasks/view";
import { cancelRoundsOfSettledTasks } from "../../team/task-cancel";
import { attachmentKey, attachmentsOfTask, findAttachment } from "../../team/attachments";
import { archivedPath } from "../../jobs/attachments-job";
import { continueLoop, goalLoopView, resumeWaiting } from "../../team/goal-loop";
import { loopAnswer } from "../../team/goal-request";
import { offerTaskToTeam } from "../../team/role-team";
import { goalsConfig } from "../../team/goals-config";
import { readSection } from "../../lib/config";
import { roleTurnsView, taskKnownToTeam, teamFieldsOfTask } from "../../team/views";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { taskCreatedSchema, taskDetailSchema, taskRolesSchema, taskSchema } from "../openapi/responses/tasks";

const idParam = z.object({ id: z.string().min(1).max(64) });

/**
 * Creates a task and, unless manual, starts the goal loop on it (its first round, or its place in
 * line): `POST /v1/tasks` and the console's new-task form.
 */
export async function openTask(env: Env, db: Db, body: NewTask, actor: string, now: Date) {
  const rounds = body.manual ? null : (body.rounds_left ?? (await readSection(db, goalsConfig)).iteration_cap);
  const created = await createTask(env, db, body, actor, now, rounds);
  // `[dispatch] policy = "role_team"`: the goal is offered to the employee's team before its first round.
  const team = await offerTaskToTeam(db, created, body, now);
  const step = body.manual ? null : await continueLoop(env, created.task_id, now);
  return { ...created, manual: body.manual, ...(team ? { team } : {}), ...(step ? loopAnswer(step) : {}) };
}

/**
 * Settles a task by hand: `POST /v1/tasks/:id/settle` and the console's "Cancel the goal". A task
 * settled while its round runs cancels the round (the team tick catches up if this is cut short),
 * and the employee's slot goes to its next waiting task.
 */
export async function settleAndRelease(
  env: Env,
  id: string,
  body: SettleBody,
  actor: string,
  now: Date,
  extraEvents: readonly NewEvent[] = [],
) {
  const { task, changed } = await settleTask(getDb(env.DB), id, body, actor, now, extraEvents);
  await cancelRoundsOfSettledTasks(env, now, task.id);
  await resumeWaiting(env, task.assignedTo, now);
  return { task, changed };
}

/**
 * An archived attachment's bytes as a download: only a path the task's record lists (the bucket is
 * never read by a guessed key), served as an opaque attachment so a browser never renders it.
 * `GET /v1/tasks/:id/attachment` and the console's `/console/tasks/:id/attachment`.
 */
export async function attachmentResponse(env: Env, taskId: string, path: string): Promise<Response> {
  const found = await findAttachment(getDb(env.DB), taskId, path);
  if (!found) throw notFound("attachment");
  const object = await env.ATTACHMENTS.get(attachmentKey(found.employeeId, taskId, found.file.path));
  if (!object) throw notFound("attachment");
  const name = found.file.path.split("/").at(-1)!;
  return new Response(object.body, {
    headers: {
      "content-type": "application/octet-stream",
      "content-length": String(object.size),
      "content-disposition": `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
      "x-content-type-options": "nosniff",
      "x-content-sha256": found.file.sha256,
      "cache-control": "private, no-store",
    },
  });
}

/** Tasks: create (routed by the dispatch policy), read, settle. */
export const tasksRoutes = new Hono<AppEnv>()
  .post(
    "/",
    describe({
      summary: "Create a task, routed by the dispatch policy; unless manual, the goal loop starts on it",
      responses: { 201: taskCreatedSchema },
      errors: ["rate_limited", "conflict", "employee_retired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("json", newTaskBody),
    async (c) => {
      return c.json(await openTask(c.env, getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, c.var.clock.now()), 201);
    },
  )
  .get(
    "/:id",
    describe({ summary: "Read a task, its goal loop and its team side", responses: { 200: taskDetailSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const task = await findTask(db, c.req.valid("param").id);
      if (!task) throw notFound("task");
      const attachments = await attachmentsOfTask(db, task.id);
      return c.json({
        ...taskView(task),
        goal_loop: await goalLoopView(db, task),
        ...(await teamFieldsOfTask(c.env, db, task.id)),
        ...(attachments ? { attachments } : {}),
      });
    },
  )
  .post(
    "/:id/settle",
    describe({
      summary: "Settle an assigned task (the same settle again is a no-op)",
      responses: { 200: taskSchema },
      errors: ["not_found", "already_settled"],
    }),
    requireAuth({ operator: "manager", runner: true }),
    validate("param", idParam),
    validate("json", settleBody),
    async (c) => {
      const { task } = await settleAndRelease(c.env, c.req.valid("param").id, c.req.valid("json"), c.var.principal.id, c.var.clock.now());
      return c.json(taskView(task));
    },
  )
  // The roles tab: the task's role turns, packets and receipts (Team-as-Agent).
  .get(
    "/:id/roles",
    describe({
      summary: "A task's role turns and whether their hash chain verifies",
      responses: { 200: taskRolesSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      if (!(await taskKnownToTeam(db, id))) throw notFound(`task ${id}`);
      return c.json(await roleTurnsView(db, id));
    },
  )
  // An archived attachment of an accepted team goal (seed 002): only a file its record lists.
  .get(
    "/:id/attachment",
    describe({
      summary: "Download a file an accepted team goal's packets named, from the employee's attachments",
      description:
        "Only a path listed under `attachments.archived` of `GET /v1/tasks/:id` is served: refused and never-named paths are 404, whatever the bucket holds.",
      responses: {
        200: { description: "The file's bytes as archived (`X-Content-SHA256` says their hash)", type: "application/octet-stream" },
      },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    validate("query", z.strictObject({ path: archivedPath })),
    async (c) => attachmentResponse(c.env, c.req.valid("param").id, c.req.valid("query").path),
  );
