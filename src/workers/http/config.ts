import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { presentSectionAt, readSection, writeSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { configSectionSchema } from "../openapi/responses/config";
import { CONFIG_SECTIONS } from "../config-sections";

const sectionParam = z.object({ section: z.string().min(1).max(64) });

function sectionOrThrow(name: string) {
  const section = CONFIG_SECTIONS.get(name);
  if (!section) {
    throw new AppError("not_found", `config section '${name}' does not exist`, {
      extra: { sections: [...CONFIG_SECTIONS.keys()].sort() },
    });
  }
  return section;
}

export const configRoutes = new Hono<AppEnv>()
  .get(
    "/:section",
    describe({ summary: "Read a config section's effective values", responses: { 200: configSectionSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer" }),
    validate("param", sectionParam),
    async (c) => {
      const section = sectionOrThrow(c.req.valid("param").section);
      const db = getDb(c.env.DB);
      return c.json(await presentSectionAt(db, section, await readSection(db, section), c.var.clock.now()));
    },
  )
  .put(
    "/:section",
    describe({
      summary: "Replace a config section (validated whole; unknown keys refused at every depth)",
      responses: { 200: configSectionSchema },
      errors: ["not_found", "approval_broker_unavailable"],
    }),
    requireAuth({ operator: "admin" }),
    validate("param", sectionParam),
    validate("json", z.unknown()),
    async (c) => {
      const section = sectionOrThrow(c.req.valid("param").section);
      const db = getDb(c.env.DB);
      const value = await writeSection(db, section, c.req.valid("json"), c.var.principal.id, c.var.clock.now(), c.env);
      return c.json(await presentSectionAt(db, section, value, c.var.clock.now()));
    },
  );
