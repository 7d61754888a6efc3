import { Hono } from "hono";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { topologyView } from "../../topology/view";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { topologySchema } from "../openapi/responses/topology";

/** D5 state for the console (seed 000 `topology.list`, require_manager). Decisions go through /v1/approvals. */
export const topologyRoutes = new Hono<AppEnv>().get(
  "/",
  describe({
    summary: "Topology evolution: the overrides and the reroute proposals awaiting a decision",
    responses: { 200: topologySchema },
  }),
  requireAuth({ operator: "manager" }),
  async (c) => {
    return c.json(await topologyView(c.env, getDb(c.env.DB), c.var.clock.now()));
  },
);
