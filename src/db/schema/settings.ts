import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** One row per config section: the validated, defaults-applied value last PUT. */
export const settings = sqliteTable("settings", {
  section: text("section").primaryKey(),
  value: text("value", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  updatedAt: text("updated_at").notNull(),
  updatedBy: text("updated_by"),
});

/** The admin test clock's offset (a single row, id = 1). Never read in production. */
export const clockState = sqliteTable("clock_state", {
  id: integer("id").primaryKey(),
  offsetMs: integer("offset_ms").notNull(),
  updatedAt: text("updated_at").notNull(),
});
