import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { authenticate } from "../../lib/auth";
import { requireAuthInWrite } from "../middleware/require-auth";
import { readSection } from "../../lib/config";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { councilConfig } from "../../council/config";
import { heartbeat, heartbeatWithToken } from "../../nodes/events";
import { getNode, isCouncilMember, nodeView, registerNode, registrationSchema } from "../../nodes/registry";
import { latestBeatOf, nodePresence } from "../../nodes/presence-store";
import { ledgerPage } from "../../nodes/reputation";
import type { AppEnv } from "../app-env";
import { nodeIdSchema } from "../../nodes/registry";
import { describe } from "../openapi/describe";
import { nodeExistingSchema, nodeHeartbeatSchema, nodeLedgerSchema, nodeRegisteredSchema, nodeSchema } from "../openapi/responses/nodes";

// Nodes registered through /a2a choose their own id (12 to 32 hex): every node route takes both.
const nodeParam = z.object({ node_id: nodeIdSchema });
const heartbeatBody = z.strictObject({
  ack_through: z.union([z.string().regex(/^\d{1,15}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)]).optional(),
});

/** How often a node should call in (the /a2a facade reports it as `next_heartbeat_ms`). */
export const NEXT_HEARTBEAT_MS = 60_000;

/** Swarm nodes (API.md "Swarm nodes"). */
export const nodesRoutes = new Hono<AppEnv>()
  // Public registration. A request carrying a node's own token is that node calling again: it gets
  // the same identity back (200), never a new one; an invalid token is refused rather than ignored.
  .post(
    "/",
    describe({
      summary: "Register a swarm node (public), or read back the caller's own node",
      description:
        "Answers 201 with the node's id and its `node_secret` (and `webhook_secret` with a webhook), each shown once. The body's `webhook_url` must be https in production (http is accepted elsewhere). A request carrying a node's own token is that node calling again: 200 with its public view and `existing: true`, never a new identity; any other valid token registers as usual, an invalid one is refused.",
      responses: { 200: nodeExistingSchema, 201: nodeRegisteredSchema },
      body: registrationSchema(true),
      // No validate(): the body is parsed here (its webhook rule depends on the environment), so the
      // parse and size refusals are listed by hand.
      errors: ["unauthorized", "malformed_request", "validation_failed", "payload_too_large"],
    }),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const header = c.req.header("authorization");
      if (header) {
        const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
        const principal = token ? await authenticate(c.env, token, now) : null;
        if (!principal) throw new AppError("unauthorized", "The bearer token is not valid");
        if (principal.kind === "node") {
          const node = await getNode(db, principal.nodeId);
          return c.json({ ...nodeView(node, await isCouncilMember(db, node.id)), existing: true }, 200);
        }
      }
      const raw = await c.req.json().catch(() => {
        throw new AppError("malformed_request", "The request body is not JSON", { errors: [{ path: "", message: "not JSON" }] });
      });
      const parsed = registrationSchema(c.env.ENVIRONMENT === "production").safeParse(raw);
      if (!parsed.success)
        throw new AppError("validation_failed", "The request json is invalid", { errors: fieldErrorsFromIssues(parsed.error.issues) });
      const config = await readSection(db, councilConfig);
      const reg = await registerNode(db, parsed.data, config.initial_reputation, now);
      return c.json(
        {
          node_id: reg.node.id,
          node_secret: reg.node_secret,
          reputation: reg.node.reputation,
          model_tier: reg.node.modelTier,
          ...(reg.webhook_secret ? { webhook_secret: reg.webhook_secret } : {}),
        },
        201,
      );
    },
  )
  .get(
    "/:node_id",
    describe({ summary: "Read a node's public view", responses: { 200: nodeSchema }, errors: ["not_found"] }),
    validate("param", nodeParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const node = await getNode(db, c.req.valid("param").node_id);
      // The latest heartbeat may still be held in presence (up to PRESENCE_WINDOW_MS newer than D1's).
      const lastHeartbeatAt = await latestBeatOf(c.env, node.id, node.lastHeartbeatAt);
      return c.json(nodeView({ ...node, lastHeartbeatAt }, await isCouncilMember(db, node.id)));
    },
  )
  // The node's reputation ledger (public, as its reputation is): every credit, penalty and decay step.
  .get(
    "/:node_id/reputation",
    describe({
      summary: "Read a node's reputation ledger, newest first",
      responses: { 200: nodeLedgerSchema },
      errors: ["not_found"],
    }),
    validate("param", nodeParam),
    validate(
      "query",
      z.object({
        limit: z.coerce.number().int().min(1).max(500).default(50),
        cursor: z
          .string()
          .regex(/^\d{1,15}$/)
          .optional(),
      }),
    ),
    async (c) => {
      const db = getDb(c.env.DB);
      const node = await getNode(db, c.req.valid("param").node_id);
      const { limit, cursor } = c.req.valid("query");
      const page = await ledgerPage(db, node.id, { limit, ...(cursor ? { cursor: Number(cursor) } : {}) });
      return c.json({ node_id: node.id, reputation: node.reputation, ...page });
    },
  )
  // The hot path (issue 8's benchmark): a node token is checked inside the heartbeat's own batch
  // (nodes/events.ts), so a heartbeat is one D1 round trip; anything else authenticates as usual.
  .post(
    "/:node_id/heartbeat",
    describe({
      summary: "Heartbeat, as the node itself: acknowledge events and get what is still pending",
      responses: { 200: nodeHeartbeatSchema },
      errors: ["forbidden"],
    }),
    requireAuthInWrite({ node: true }),
    validate("param", nodeParam),
    validate("json", heartbeatBody),
    async (c) => {
      const { node_id } = c.req.valid("param");
      const { ack_through } = c.req.valid("json");
      const ack = ack_through === undefined ? undefined : Number(ack_through);
      const now = c.var.clock.now();
      const db = getDb(c.env.DB);
      const presented = c.var.presented;
      const presence = nodePresence(c.env, { defer: (work) => c.executionCtx.waitUntil(work) });
      let beat = presented ? await heartbeatWithToken(db, node_id, presented, ack, now, presence) : null;
      if (!beat) {
        const principal = presented ? await c.var.authenticate!() : c.var.principal;
        if (principal.kind !== "node" || principal.nodeId !== node_id) throw new AppError("forbidden", "A node heartbeats for itself only");
        // A suspended node is refused here (403, reason node_suspended), with nothing recorded.
        beat = await heartbeat(db, node_id, ack, now, presence);
      }
      const { recorded: _recorded, ...answer } = beat;
      return c.json({ node_id, ...answer, server_time: now.toISOString(), next_heartbeat_ms: NEXT_HEARTBEAT_MS });
    },
  );
