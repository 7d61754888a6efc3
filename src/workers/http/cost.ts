import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { costByRole } from "../../team/ledger";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { costByRoleSchema } from "../openapi/responses/cost";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";

/** `GET /v1/cost/by-role`: spend per role and model; unknown usage is reported as unknown. */
export const costRoutes = new Hono<AppEnv>().get(
  "/by-role",
  describe({ summary: "Spend per role and model (optionally for one task)", responses: { 200: costByRoleSchema } }),
  requireAuth({ operator: "viewer" }),
  validate("query", z.object({ episode_id: z.string().min(1).max(64).optional() })),
  async (c) => {
    const episode = c.req.valid("query").episode_id;
    return c.json({ ...(episode ? { episode_id: episode } : {}), by_role: await costByRole(getDb(c.env.DB), episode) });
  },
);
