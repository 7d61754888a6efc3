import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { putSoul, soulPutBody, soulVersionsView, soulVersionView, soulView } from "../../evolution/soul-api";
import { actsAsEmployee } from "../../jobs/employee-token";
import { type Principal } from "../../lib/auth";
import { requireAuth } from "../middleware/require-auth";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { employeeId } from "../../tasks/employees";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { soulPutSchema, soulSchema, soulVersionSchema, soulVersionsSchema } from "../openapi/responses/employees-evolution";

const idParam = z.object({ id: employeeId });
const versionParam = z.object({ id: employeeId, version: z.coerce.number().int().min(1).max(1_000_000_000) });

/** Reading: an operator, or the employee's own run (its SOUL is no secret to itself). */
function assertOperatorOrSelf(principal: Principal, id: string) {
  if (principal.kind === "operator" || actsAsEmployee(principal, id)) return;
  throw new AppError("forbidden", "This token acts for another employee, or for none");
}

/**
 * An employee's SOUL (issue 23 items 1 and 6), mounted under `/v1/employees`. Only an operator
 * (manager) writes it: no employee token reaches the PUT, whatever the evolution path.
 */
export const soulRoutes = new Hono<AppEnv>()
  .get(
    "/:id/soul",
    describe({
      summary: "Read the employee's current SOUL, its version and fingerprint",
      responses: { 200: soulSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer", member: true }),
    validate("param", idParam),
    async (c) => {
      const { id } = c.req.valid("param");
      assertOperatorOrSelf(c.var.principal, id);
      return c.json(await soulView(getDb(c.env.DB), id));
    },
  )
  .put(
    "/:id/soul",
    describe({
      summary: "Replace the employee's SOUL (a new version, only on `expected_version`)",
      responses: { 200: soulPutSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", soulPutBody),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await putSoul(getDb(c.env.DB), id, c.req.valid("json"), c.var.principal.id, c.var.clock.now()));
    },
  )
  .get(
    "/:id/soul/versions",
    describe({
      summary: "The kept SOUL versions, newest first, each with its diff from the one before",
      responses: { 200: soulVersionsSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => {
      return c.json(await soulVersionsView(getDb(c.env.DB), c.req.valid("param").id));
    },
  )
  .get(
    "/:id/soul/versions/:version",
    describe({ summary: "One kept SOUL version with its full text", responses: { 200: soulVersionSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer" }),
    validate("param", versionParam),
    async (c) => {
      const { id, version } = c.req.valid("param");
      return c.json(await soulVersionView(getDb(c.env.DB), id, version));
    },
  );
