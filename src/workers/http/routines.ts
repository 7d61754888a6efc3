import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import {
  createRoutine,
  deleteRoutine,
  getRoutine,
  listRoutines,
  routineBody,
  routineId,
  routineListQuery,
  routinePatch,
  routineView,
  updateRoutine,
} from "../../routines/store";
import type { AppEnv } from "../app-env";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import { describe } from "../openapi/describe";
import { routineDeletedSchema, routineDetailSchema, routinePageSchema, routineSchema } from "../openapi/responses/routines";

const idParam = z.object({ id: routineId });

/** Routines: scheduled work of an employee, each slot opening a goal from a template (docs/routines.md). */
export const routinesRoutes = new Hono<AppEnv>()
  .post(
    "/",
    describe({
      summary: "Create a routine: a schedule (cron in UTC, or every N minutes) that opens a goal for an employee",
      responses: { 201: routineSchema },
      errors: ["employee_retired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("json", routineBody),
    async (c) => {
      const now = c.var.clock.now();
      const row = await createRoutine(getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, now);
      return c.json(routineView(row, now, null), 201);
    },
  )
  .get(
    "/",
    describe({
      summary: "List routines by id, optionally of one employee, each with its last outcome",
      responses: { 200: routinePageSchema },
    }),
    requireAuth({ operator: "viewer" }),
    validate("query", routineListQuery),
    async (c) => c.json(await listRoutines(getDb(c.env.DB), c.req.valid("query"), c.var.clock.now())),
  )
  .get(
    "/:id",
    describe({
      summary: "Read a routine: its schedule, next and last slot, last goal and newest outcomes",
      responses: { 200: routineDetailSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => c.json(await getRoutine(getDb(c.env.DB), c.req.valid("param").id, c.var.clock.now())),
  )
  .patch(
    "/:id",
    describe({
      summary: "Change a routine (name, schedule, template, enabled); with `revision`, only if it is the current one",
      responses: { 200: routineDetailSchema },
      errors: ["not_found", "conflict", "employee_retired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", routinePatch),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const { id } = c.req.valid("param");
      await updateRoutine(db, id, c.req.valid("json"), c.var.principal.id, now);
      return c.json(await getRoutine(db, id, now));
    },
  )
  .delete(
    "/:id",
    describe({
      summary: "Delete a routine (its goals and outcome events stay)",
      responses: { 200: routineDeletedSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    async (c) => c.json(await deleteRoutine(getDb(c.env.DB), c.req.valid("param").id, c.var.principal.id, c.var.clock.now())),
  );
