import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import * as z from "zod";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { ASSETS } from "../../web/assets";
import type { AppEnv } from "../app-env";
import { describe, withOperationSpec } from "../openapi/describe";

const ASSET_DESCRIPTION = "The script (`text/javascript`) or stylesheet (`text/css`), by its name; `ETag` is its version";

/** `describe` names one media type per status; an asset is a script or a stylesheet, so its 200 lists both. */
const scriptOrStylesheet = withOperationSpec(describeRoute({}), () => ({
  responses: { 200: { description: ASSET_DESCRIPTION, content: { "text/javascript": {}, "text/css": {} } } },
}));

/**
 * `/assets/<name>`: the pages' scripts and stylesheets (htmx, uPlot, ours), bundled into the Worker.
 * A URL with the current `?v=` is cached for good; anything else for a minute.
 */
export const webAssetsRoutes = new Hono<AppEnv>().get(
  "/:name",
  describe({
    summary: "A script or stylesheet of the pages (htmx, uPlot, ours)",
    description: "With the current `?v=` it may be cached for good (`immutable`); otherwise for a minute.",
    responses: {
      200: { description: ASSET_DESCRIPTION, type: "text/javascript" },
    },
    errors: ["not_found"],
  }),
  scriptOrStylesheet,
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
