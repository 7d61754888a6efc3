import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../../db/client";
import { requireAuth } from "../../../lib/auth";
import { validate } from "../../../lib/validation";
import { isCouncilMember, nodePatch, nodeView, patchNode } from "../../../nodes/registry";
import type { AppEnv } from "../../app-env";

const nodeParam = z.object({ node_id: z.string().regex(/^node_[0-9a-f]{16}$/) });

/** `PATCH /v1/admin/nodes/:node_id`: reputation, model tier, webhook verification. */
export const adminNodesRoutes = new Hono<AppEnv>().patch(
  "/:node_id",
  requireAuth({ operator: "admin" }),
  validate("param", nodeParam),
  validate("json", nodePatch),
  async (c) => {
    const db = getDb(c.env.DB);
    const node = await patchNode(db, c.req.valid("param").node_id, c.req.valid("json"), c.var.principal.id, c.var.clock.now());
    return c.json(nodeView(node, await isCouncilMember(db, node.id)));
  },
);
