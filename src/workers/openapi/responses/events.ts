import * as z from "zod";
import type { EventView } from "../../../lib/events";
import { jsonObject, timestamp } from "./common";

export const eventSchema = z.object({
  id: z.string(),
  type: z.string(),
  subject: z.string().nullable(),
  payload: jsonObject,
  created_at: timestamp,
}) satisfies z.ZodType<EventView>;

/** `GET /v1/events`: oldest first; `next_cursor` is null on the last page. */
export const eventPageSchema = z.object({ events: z.array(eventSchema), next_cursor: z.string().nullable() });
