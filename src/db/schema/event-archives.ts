import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Archived events (issue 26): one row per R2 object holding a run of events of one UTC day, in id
 * order (`first_id`..`last_id`, every id between them). The rows left D1's `events` in the batch
 * that wrote this row; the audit export reads them back from `key` (src/events/archive.ts).
 */
export const eventArchives = sqliteTable(
  "event_archives",
  {
    key: text("key").primaryKey(),
    day: text("day").notNull(),
    firstId: integer("first_id").notNull(),
    lastId: integer("last_id").notNull(),
    events: integer("events").notNull(),
    bytes: integer("bytes").notNull(),
    // SHA-256 of the stored (gzip) bytes, so a replaced object is noticed on read.
    sha256: text("sha256").notNull(),
    archivedAt: text("archived_at").notNull(),
  },
  (t) => [uniqueIndex("event_archives_first_id_unique").on(t.firstId), index("event_archives_day_idx").on(t.day)],
);
