import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../../db/client";
import { requireAuth } from "../../middleware/require-auth";
import { validate } from "../../middleware/validate";
import { isCouncilMember, nodePatch, nodeView, patchNode } from "../../../nodes/registry";
import type { AppEnv } from "../../app-env";
import { describe } from "../../openapi/describe";
import { nodeSchema } from "../../openapi/responses/nodes";
import { nodeIdSchema } from "../../../nodes/registry";

// Nodes registered through /a2a choose their own id (12 to 32 hex): every node route takes both.
const nodeParam = z.object({ node_id: nodeIdSchema });

/** `PATCH /v1/admin/nodes/:node_id`: reputation, model tier, webhook verification. */
export const adminNodesRoutes = new Hono<AppEnv>().patch(
  "/:node_id",
  describe({
    summary: "Change a node's reputation, model tier, webhook verification or suspension",
    responses: { 200: nodeSchema },
    errors: ["not_found", "conflict"],
  }),
  requireAuth({ operator: "admin" }),
  validate("param", nodeParam),
  validate("json", nodePatch),
  async (c) => {
    const db = getDb(c.env.DB);
    const node = await patchNode(db, c.req.valid("param").node_id, c.req.valid("json"), c.var.principal.id, c.var.clock.now());
    return c.json(nodeView(node, await isCouncilMember(db, node.id)));
  },
);
