import { Hono } from "hono";
import { sql } from "drizzle-orm";
import pkg from "../../../package.json";
import { getDb } from "../../db/client";
import type { AppEnv } from "../app-env";

export const healthRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const version = c.env.VERSION ?? pkg.version;
  try {
    await getDb(c.env.DB).run(sql`SELECT 1`);
    return c.json({ ok: true, version, db: "ok", environment: c.env.ENVIRONMENT, now: c.var.clock.now().toISOString() });
  } catch (err) {
    console.error("health: database check failed", err);
    return c.json({ ok: false, version, db: "error" }, 503);
  }
});
