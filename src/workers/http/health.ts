import { Hono } from "hono";
import { sql } from "drizzle-orm";
import pkg from "../../../package.json";
import { getDb } from "../../db/client";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { healthDownSchema, healthOkSchema } from "../openapi/responses/health";

export const healthRoutes = new Hono<AppEnv>().get(
  "/",
  describe({
    summary: "Liveness: the version, and whether the database answers",
    responses: { 200: healthOkSchema, 503: healthDownSchema },
  }),
  async (c) => {
    const version = c.env.VERSION ?? pkg.version;
    try {
      await getDb(c.env.DB).run(sql`SELECT 1`);
      return c.json({ ok: true, version, db: "ok", environment: c.env.ENVIRONMENT, now: c.var.clock.now().toISOString() });
    } catch (err) {
      console.error("health: database check failed", err);
      return c.json({ ok: false, version, db: "error" }, 503);
    }
  },
);
