import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { label, prose } from "../../lib/validation";
import { validate } from "../middleware/validate";
import { checkAgainstPrinciples, queryPrinciples } from "../../council/principles";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { principleCheckSchema, principlesSchema } from "../openapi/responses/council";

/** Governance principles crystallised from confident approvals (public). */
export const governanceRoutes = new Hono<AppEnv>()
  // `q` is refused (422) with a control character, bidi override or lone surrogate: search text only.
  .get(
    "/principles",
    describe({
      summary: "List the active governance principles, or those matching `q`, best match first",
      responses: { 200: principlesSchema },
    }),
    validate("query", z.object({ q: label(500).optional() })),
    async (c) => c.json({ principles: await queryPrinciples(getDb(c.env.DB), c.req.valid("query").q) }),
  )
  .post(
    "/principles/check",
    describe({
      summary: "Check a text against the active principles (overlap with each, highest first)",
      responses: { 200: principleCheckSchema },
    }),
    validate("json", z.strictObject({ text: prose(20_000) })),
    async (c) => c.json(await checkAgainstPrinciples(getDb(c.env.DB), c.req.valid("json").text)),
  );
