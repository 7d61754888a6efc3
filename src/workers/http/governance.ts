import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { prose, validate } from "../../lib/validation";
import { checkAgainstPrinciples, queryPrinciples } from "../../council/principles";
import type { AppEnv } from "../app-env";

/** Governance principles crystallised from confident approvals (public). */
export const governanceRoutes = new Hono<AppEnv>()
  .get("/principles", validate("query", z.object({ q: z.string().trim().min(1).max(500).optional() })), async (c) =>
    c.json({ principles: await queryPrinciples(getDb(c.env.DB), c.req.valid("query").q) }),
  )
  .post("/principles/check", validate("json", z.strictObject({ text: prose(20_000) })), async (c) =>
    c.json(await checkAgainstPrinciples(getDb(c.env.DB), c.req.valid("json").text)),
  );
