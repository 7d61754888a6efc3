import { Hono } from "hono";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { listEvents } from "../../lib/events";
import { pageQuery } from "../../lib/paging";
import { label } from "../../lib/validation";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { eventStream } from "./event-stream";

// Filters reach SQL: no control character (a NUL), bidi override or lone surrogate (422).
const eventsQuery = pageQuery.extend({
  type: label(100).optional(),
  subject: label(200).optional(),
});
/** The list's filters and cursor; a stream has no page size. */
const streamQuery = eventsQuery.omit({ limit: true });

export const eventsRoutes = new Hono<AppEnv>()
  .get("/", requireAuth({ operator: "viewer" }), validate("query", eventsQuery), async (c) => {
    const q = c.req.valid("query");
    return c.json(
      await listEvents(getDb(c.env.DB), {
        typePrefix: q.type,
        subject: q.subject,
        after: q.cursor === undefined ? undefined : Number(q.cursor),
        limit: q.limit,
      }),
    );
  })
  .get("/stream", requireAuth({ operator: "viewer" }), validate("query", streamQuery), (c) => eventStream(c, c.req.valid("query"), false));

/** `GET /v1/public/events/stream`: the public event types, for anyone (no token). */
export const publicEventsRoutes = new Hono<AppEnv>().get("/stream", validate("query", streamQuery), (c) =>
  eventStream(c, c.req.valid("query"), true),
);
