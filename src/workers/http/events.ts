import { Hono } from "hono";
import { getDb } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { listEvents } from "../../lib/events";
import { pageQuery } from "../../lib/paging";
import { label } from "../../lib/validation";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { eventPageSchema } from "../openapi/responses/events";
import { eventStream } from "./event-stream";
import { STREAM_SLOTS_PER_CLIENT } from "./stream-slots";

// Filters reach SQL: no control character (a NUL), bidi override or lone surrogate (422).
const eventsQuery = pageQuery.extend({
  type: label(100).optional(),
  subject: label(200).optional(),
});
/** The list's filters and cursor; a stream has no page size. */
const streamQuery = eventsQuery.omit({ limit: true });

const STREAM_DESCRIPTION =
  "Starts after `Last-Event-ID` (a reconnecting EventSource sends it), else after `cursor`, else at the newest event; both must be event ids (1-15 digits). The stream ends after 10 minutes and the client reconnects. " +
  `A client (its token, or its address without one) holds at most ${STREAM_SLOTS_PER_CLIENT} open streams: one more is \`429 too_many_streams\` with \`Retry-After\`.`;
const STREAM_RESPONSES = {
  200: {
    description:
      "Server-Sent Events: `ready` first, then one message per event (`event:` its type, `id:` its id, `data:` the event as `GET /v1/events` shows it)",
    type: "text/event-stream",
  },
};

export const eventsRoutes = new Hono<AppEnv>()
  .get(
    "/",
    describe({ summary: "Page through the activity feed, oldest first", responses: { 200: eventPageSchema } }),
    requireAuth({ operator: "viewer" }),
    validate("query", eventsQuery),
    async (c) => {
      const q = c.req.valid("query");
      return c.json(
        await listEvents(getDb(c.env.DB), {
          typePrefix: q.type,
          subject: q.subject,
          after: q.cursor === undefined ? undefined : Number(q.cursor),
          limit: q.limit,
        }),
      );
    },
  )
  .get(
    "/stream",
    describe({
      summary: "Follow the activity feed live (Server-Sent Events)",
      description: STREAM_DESCRIPTION,
      responses: STREAM_RESPONSES,
      errors: ["too_many_streams"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("query", streamQuery),
    (c) => eventStream(c, c.req.valid("query"), false),
  );

/** `GET /v1/public/events/stream`: the public event types, for anyone (no token). */
export const publicEventsRoutes = new Hono<AppEnv>().get(
  "/stream",
  describe({
    summary: "Follow the public event types live (Server-Sent Events), without a token",
    description: STREAM_DESCRIPTION,
    responses: STREAM_RESPONSES,
    errors: ["too_many_streams"],
  }),
  validate("query", streamQuery),
  (c) => eventStream(c, c.req.valid("query"), true),
);
