import { Hono } from "hono";
import { z } from "zod";
import { requireAuth } from "../../middleware/require-auth";
import { AppError } from "../../../lib/errors";
import { appendEvent } from "../../../lib/events";
import { getDb } from "../../../db/client";
import { validate } from "../../middleware/validate";
import type { AppEnv } from "../../app-env";
import { TICK_NAMES, TICKS } from "../../cron/ticks";

export const ticksRoutes = new Hono<AppEnv>().post(
  "/:name",
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
