import * as z from "zod";
import { timestamp } from "./common";

/** `GET /v1/health` while the database answers. */
export const healthOkSchema = z.object({
  ok: z.literal(true),
  version: z.string(),
  db: z.literal("ok"),
  environment: z.enum(["development", "test", "production"]),
  now: timestamp,
});

/** `GET /v1/health` when the database check failed (a 503 with this body, not a problem). */
export const healthDownSchema = z.object({ ok: z.literal(false), version: z.string(), db: z.literal("error") });
