import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../../db/client";
import { requireAuth } from "../../../lib/auth";
import { mintCredential } from "../../../lib/credentials";
import { appendEvent } from "../../../lib/events";
import { validate } from "../../../lib/validation";
import type { AppEnv } from "../../app-env";

const newRunner = z.object({ name: z.string().trim().min(1).max(100) });

export const runnersRoutes = new Hono<AppEnv>().post("/", requireAuth({ operator: "admin" }), validate("json", newRunner), async (c) => {
  const { name } = c.req.valid("json");
  const db = getDb(c.env.DB);
  const now = c.var.clock.now();
  const cred = await mintCredential(db, { kind: "runner", name }, now);
  await db.batch([
    cred.insert,
    appendEvent(db, { type: "runner.created", subject: cred.id, payload: { runner_id: cred.id, name, by: c.var.principal.id } }, now),
  ]);
  return c.json({ runner_id: cred.id, name, token: cred.token }, 201);
});
