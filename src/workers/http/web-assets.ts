import { Hono } from "hono";
import { z } from "zod";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { ASSETS } from "../../web/assets";
import type { AppEnv } from "../app-env";

/**
 * `/assets/<name>`: the pages' scripts and stylesheets (htmx, uPlot, ours), bundled into the Worker.
 * A URL with the current `?v=` is cached for good; anything else for a minute.
 */
export const webAssetsRoutes = new Hono<AppEnv>().get(
  "/:name",
  validate("param", z.object({ name: z.string().regex(/^[a-z0-9.-]{1,40}$/) })),
  validate("query", z.object({ v: z.string().max(16).optional() })),
  (c) => {
    const asset = ASSETS.get(c.req.valid("param").name);
    if (!asset) throw new AppError("not_found", "No such asset");
    const current = c.req.valid("query").v === asset.version;
    return c.body(asset.body, 200, {
      "Content-Type": asset.type,
      "Cache-Control": current ? "public, max-age=31536000, immutable" : "public, max-age=60",
      ETag: `"${asset.version}"`,
      "X-Content-Type-Options": "nosniff",
    });
  },
);
