import { Hono } from "hono";
import { z } from "zod";
import { requireAuth } from "../../../lib/auth";
import { AppError } from "../../../lib/errors";
import { appendEvent } from "../../../lib/events";
import { getDb } from "../../../db/client";
import { validate } from "../../../lib/validation";
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
    // Whatever the tick changed carries its own events in the batch that changed it; this row only
    // says who ran it by hand and what it reported, which the operator also has in the answer. So it
    // is written beside the answer (`waitUntil`), not before it: a tick run by hand costs what a cron
    // tick costs plus the request (issue 7's benchmark measures the topology tick through this route).
    const event = { type: "tick.ran", subject: `tick:${name}`, payload: { name, summary, trigger: "admin", by: c.var.principal.id } };
    c.executionCtx.waitUntil(
      (async () => {
        try {
          await appendEvent(getDb(c.env.DB), event, now);
        } catch (err) {
          console.error(JSON.stringify({ msg: "tick.ran not recorded", name, by: event.payload.by, error: String(err) }));
        }
      })(),
    );
    return c.json({ ran: name, summary });
  },
);
