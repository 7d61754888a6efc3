import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** The activity feed: append-only, one row per state change, seed event names kept verbatim. */
export const events = sqliteTable(
  "events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    type: text("type").notNull(),
    subject: text("subject"),
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: text("created_at").notNull(),
    // Lets at-least-once producers (the RunnerInbox outbox) append an event exactly once.
    dedupeKey: text("dedupe_key").unique(),
  },
  (t) => [index("events_type_idx").on(t.type, t.id), index("events_subject_idx").on(t.subject, t.id)],
);
