import { Hono } from "hono";
import * as z from "zod";
import { getDb, type Db } from "../../../db/client";
import { OPERATOR_ROLES, type credentials, type OperatorRole } from "../../../db/schema";
import { requireAuth } from "../../middleware/require-auth";
import { credentialCursor, listCredentials, mintCredential, revokeCredential } from "../../../lib/credentials";
import { appendEvent } from "../../../lib/events";
import { keysetPageQuery } from "../../../lib/paging";
import { label } from "../../../lib/validation";
import { validate } from "../../middleware/validate";
import type { AppEnv } from "../../app-env";
import { describe } from "../../openapi/describe";
import { operatorCreatedSchema, operatorPageSchema, operatorRevokedSchema } from "../../openapi/responses/admin";

export const newOperator = z.strictObject({ name: label(100), role: z.enum(OPERATOR_ROLES) });
const operatorParam = z.object({ id: z.string().min(1).max(64) });

export function operatorView(r: typeof credentials.$inferSelect) {
  return { operator_id: r.id, name: r.name, role: r.role, created_at: r.createdAt, revoked_at: r.revokedAt };
}

/** Mints an operator token with its `operator.created` event (the API's and the console's create). Shown once. */
export async function createOperatorToken(db: Db, name: string, role: OperatorRole, by: string, now: Date) {
  const cred = await mintCredential(db, { kind: "operator", name, role }, now);
  await db.batch([
    cred.insert,
    appendEvent(db, { type: "operator.created", subject: cred.id, payload: { operator_id: cred.id, name, role, by } }, now),
  ]);
  return { operator_id: cred.id, name, role, token: cred.token };
}

export const operatorsRoutes = new Hono<AppEnv>()
  .post(
    "/",
    describe({ summary: "Mint an operator token (shown once)", responses: { 201: operatorCreatedSchema } }),
    requireAuth({ operator: "admin" }),
    validate("json", newOperator),
    async (c) => {
      const { name, role } = c.req.valid("json");
      return c.json(await createOperatorToken(getDb(c.env.DB), name, role, c.var.principal.id, c.var.clock.now()), 201);
    },
  )
  .get(
    "/",
    describe({ summary: "List operator tokens, oldest first", responses: { 200: operatorPageSchema } }),
    requireAuth({ operator: "admin" }),
    validate("query", keysetPageQuery(credentialCursor)),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const page = await listCredentials(getDb(c.env.DB), "operator", { limit, after: cursor });
      return c.json({
        operators: page.items.map(operatorView),
        next_cursor: page.next_cursor,
      });
    },
  )
  .delete(
    "/:id",
    describe({
      summary: "Revoke an operator token (revoking again keeps the first time)",
      responses: { 200: operatorRevokedSchema },
      errors: ["not_found", "payload_too_large"],
    }),
    requireAuth({ operator: "admin" }),
    validate("param", operatorParam),
    async (c) => {
      const row = await revokeCredential(getDb(c.env.DB), "operator", c.req.valid("param").id, c.var.principal.id, c.var.clock.now());
      return c.json({ operator_id: row.id, name: row.name, role: row.role, revoked_at: row.revokedAt });
    },
  );
