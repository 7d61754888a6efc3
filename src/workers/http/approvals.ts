import { Hono } from "hono";
import * as z from "zod";
import { decideApproval, listApprovals, pollApproval } from "../../approvals/broker";
import { getDb } from "../../db/client";
import { APPROVAL_STATUSES } from "../../db/schema";
import { BOOTSTRAP_ADMIN_ID } from "../../lib/auth";
import { requireAuth } from "../middleware/require-auth";
import { AppError, notFound } from "../../lib/errors";
import { pageQuery } from "../../lib/paging";
import { label } from "../../lib/validation";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { approvalPageSchema, approvalSchema } from "../openapi/responses/approvals";

const approvalParam = z.object({ id: z.string().min(1).max(64) });
const listQuery = pageQuery.extend({ status: z.enum(APPROVAL_STATUSES).optional() });
const decideBody = z.strictObject({ decision: z.enum(["approve", "deny"]), note: label(1_000).optional() });

/** Approvals (seed 000, API.md "Approvals"): read by viewers, decided by a named manager only. */
export const approvalsRoutes = new Hono<AppEnv>()
  .get(
    "/",
    describe({ summary: "List approvals, newest first", responses: { 200: approvalPageSchema } }),
    requireAuth({ operator: "viewer" }),
    validate("query", listQuery),
    async (c) => {
      const q = c.req.valid("query");
      const page = await listApprovals(
        getDb(c.env.DB),
        { status: q.status, limit: q.limit, cursor: q.cursor === undefined ? undefined : Number(q.cursor) },
        c.var.clock.now(),
      );
      return c.json(page);
    },
  )
  .get(
    "/:id",
    describe({ summary: "Read one approval (an expired one reads as expired)", responses: { 200: approvalSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer" }),
    validate("param", approvalParam),
    async (c) => {
      const view = await pollApproval(getDb(c.env.DB), c.req.valid("param").id, c.var.clock.now());
      if (!view) throw notFound("approval");
      return c.json(view);
    },
  )
  .post(
    "/:id/decide",
    describe({
      summary: "Approve or deny a pending approval, as a named manager",
      responses: { 200: approvalSchema },
      errors: ["not_found", "already_decided", "approval_expired"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", approvalParam),
    validate("json", decideBody),
    async (c) => {
      const principal = c.var.principal;
      // An approval names the person who gave it; the shared bootstrap token is nobody in particular
      // (it is also not counted as a possible decider, so `no_channel` stays truthful).
      if (principal.id === BOOTSTRAP_ADMIN_ID) {
        throw new AppError("forbidden", "The bootstrap ADMIN_TOKEN cannot decide approvals; use a named manager or admin operator token", {
          extra: { reason: "bootstrap_token_not_a_decider" },
        });
      }
      const body = c.req.valid("json");
      const view = await decideApproval(
        getDb(c.env.DB),
        c.req.valid("param").id,
        { decision: body.decision, note: body.note, operatorId: principal.id, via: "api" },
        c.var.clock.now(),
      );
      return c.json(view);
    },
  );
