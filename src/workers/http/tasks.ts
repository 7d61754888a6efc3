import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../../lib/auth";
import { notFound } from "../../lib/errors";
import { validate } from "../../lib/validation";
import { createTask, newTaskBody } from "../../tasks/create-task";
import { settleBody, settleTask } from "../../tasks/settle";
import { findTask, taskView } from "../../tasks/view";
import { cancelRoundsOfSettledTasks } from "../../team/task-cancel";
import { teamFieldsOfTask } from "../../team/views";
import type { AppEnv } from "../app-env";

const idParam = z.object({ id: z.string().min(1).max(64) });

/** Tasks: create (routed by the dispatch policy), read, settle. */
export const tasksRoutes = new Hono<AppEnv>()
  .post("/", requireAuth({ operator: "manager" }), validate("json", newTaskBody), async (c) => {
    const created = await createTask(c.env, getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, c.var.clock.now());
    return c.json(created, 201);
  })
  .get("/:id", requireAuth({ operator: "viewer" }), validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const task = await findTask(db, c.req.valid("param").id);
    if (!task) throw notFound("task");
    return c.json({ ...taskView(task), ...(await teamFieldsOfTask(c.env, db, task.id)) });
  })
  .post(
    "/:id/settle",
    requireAuth({ operator: "manager", runner: true }),
    validate("param", idParam),
    validate("json", settleBody),
    async (c) => {
      const now = c.var.clock.now();
      const { task } = await settleTask(getDb(c.env.DB), c.req.valid("param").id, c.req.valid("json"), c.var.principal.id, now);
      // A goal task settled while its team round runs cancels the round (the team tick catches up if this is cut short).
      await cancelRoundsOfSettledTasks(c.env, now, task.id);
      return c.json(taskView(task));
    },
  );
