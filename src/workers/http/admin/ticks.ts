import { Hono } from "hono";
import * as z from "zod";
import { requireAuth } from "../../middleware/require-auth";
import { AppError } from "../../../lib/errors";
import { appendEvent } from "../../../lib/events";
import { getDb } from "../../../db/client";
import { validate } from "../../middleware/validate";
import type { AppEnv } from "../../app-env";
import { describe } from "../../openapi/describe";
import { tickRanSchema } from "../../openapi/responses/admin";
import { TICK_NAMES, TICKS } from "../../cron/ticks";

export const ticksRoutes = new Hono<AppEnv>().post(
  "/:name",
  // The body limit runs before every route: a body sent here anyway (none is read) can be refused.
  describe({ summary: "Run one scheduled tick now, by hand", responses: { 200: tickRanSchema }, errors: ["payload_too_large"] }),
  requireAuth({ operator: "manager" }),
  validate("param", z.object({ name: z.enum(TICK_NAMES) })),
  async (c) => {
    const { name } = c.req.valid("param");
    const tick = TICKS.get(name);
    if (!tick)
      throw new AppError("not_found", `The '${name}' tick is not part of this build yet`, { extra: { available: [...TICKS.keys()] } });
    const now = c.var.clock.now();
    const summary = await tick.run(c.env, now);
    await appendEvent(
      getDb(c.env.DB),
      { type: "tick.ran", subject: `tick:${name}`, payload: { name, summary, trigger: "admin", by: c.var.principal.id } },
      now,
    );
    return c.json({ ran: name, summary });
  },
);
