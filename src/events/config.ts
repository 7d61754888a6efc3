import * as z from "zod";
import { defineConfigSection } from "../lib/config";

/**
 * `events` config section (issue 26): how long events stay in D1. Older ones are archived to R2 in
 * id order by the `events` tick (src/events/retention.ts) and stay in the audit export; the audit
 * chain's own rows never leave D1, so the trail verifies across the archive boundary.
 */
export const eventsConfig = defineConfigSection(
  "events",
  z.object({
    /** Whole UTC days of events kept in D1 before the tick moves them to the archive. */
    retention_days: z.number().int().min(1).max(3_650).default(90),
  }),
);
export type EventsConfig = z.infer<typeof eventsConfig.schema>;
