import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../../db/client";
import { requireAuth } from "../../middleware/require-auth";
import {
  CLOCK_EARLIEST_MS,
  CLOCK_LATEST_MS,
  clockBoundProblem,
  offsetAfter,
  rememberClockOffset,
  saveClockOffset,
  testClockEnabled,
} from "../../../lib/clock";
import { AppError } from "../../../lib/errors";
import { appendEvent } from "../../../lib/events";
import { validate } from "../../middleware/validate";
import type { AppEnv } from "../../app-env";
import { describe } from "../../openapi/describe";
import { clockSchema } from "../../openapi/responses/admin";

const clockChange = z.union([
  z.strictObject({
    advance_ms: z
      .number()
      .int()
      .min(0)
      .max(400 * 24 * 3_600_000),
  }),
  z.strictObject({ set: z.iso.datetime() }),
]);

export const clockRoutes = new Hono<AppEnv>()
  .get(
    "/",
    describe({ summary: "Read the request clock and its offset from real time", responses: { 200: clockSchema } }),
    requireAuth({ operator: "admin" }),
    (c) => c.json({ now: c.var.clock.now().toISOString(), offset_ms: c.var.clock.offsetMs }),
  )
  .post(
    "/",
    describe({
      summary: "Move the test clock (advance it, or set it), outside production only",
      description: "Absent in production: every caller gets 404 there, before any token is looked at.",
      responses: { 200: clockSchema },
      errors: ["not_found"],
    }),
    async (c, next) => {
      // The test clock does not exist in production: not "forbidden", simply absent, for every
      // caller (checked before auth, so no token's 401/403 tells that something is there).
      if (!testClockEnabled(c.env)) throw new AppError("not_found", "The test clock is not available in production");
      await next();
    },
    requireAuth({ operator: "admin" }),
    validate("json", clockChange),
    async (c) => {
      const change = c.req.valid("json");
      const before = c.var.clock;
      const realNowMs = Date.now();
      const offsetMs = offsetAfter(change, before.offsetMs, realNowMs);
      // Checked on the resulting now, so repeated small advances cannot creep past the bound either.
      const problem = clockBoundProblem(realNowMs + offsetMs);
      if (problem) {
        throw new AppError("validation_failed", "The test clock must stay within its bounds", {
          errors: [{ path: "advance_ms" in change ? "advance_ms" : "set", message: problem }],
          extra: { earliest: new Date(CLOCK_EARLIEST_MS).toISOString(), latest: new Date(CLOCK_LATEST_MS).toISOString() },
        });
      }
      const db = getDb(c.env.DB);
      const now = new Date(realNowMs + offsetMs);
      await db.batch([
        saveClockOffset(db, offsetMs, now),
        appendEvent(
          db,
          {
            type: "clock.changed",
            subject: "clock",
            payload: { offset_ms: offsetMs, previous_offset_ms: before.offsetMs, by: c.var.principal.id },
          },
          now,
        ),
      ]);
      rememberClockOffset(offsetMs);
      return c.json({ now: now.toISOString(), offset_ms: offsetMs });
    },
  );
