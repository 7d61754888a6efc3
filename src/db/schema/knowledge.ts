import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * An employee's memory and wiki (issue 11 item 6): written by operators, read by the employee's
 * role members through the crewplane MCP server (`memory_search`, `wiki_search`, `wiki_read`).
 * Each table has an INTEGER PRIMARY KEY (`seq`) because its FTS5 index (created in the custom
 * migration `*_knowledge_fts.sql`, kept in sync by triggers) is keyed by rowid, and only an
 * INTEGER PRIMARY KEY rowid survives a VACUUM unchanged.
 */
export const employeeMemory = sqliteTable(
  "employee_memory",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull(),
    employeeId: text("employee_id").notNull(),
    text: text("text").notNull(),
    // Space-joined, so the full-text index matches them as words.
    tags: text("tags").notNull().default(""),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    // How much an entry the prediction engine wrote matters (seed 003 StoreEpisodic's importance);
    // null for an entry nobody rated (a manager's note).
    importance: real("importance"),
  },
  (t) => [uniqueIndex("employee_memory_id_idx").on(t.id), index("employee_memory_employee_idx").on(t.employeeId, t.createdAt)],
);
export type EmployeeMemoryRow = typeof employeeMemory.$inferSelect;

export const employeeWiki = sqliteTable(
  "employee_wiki",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    employeeId: text("employee_id").notNull(),
    slug: text("slug").notNull(),
    title: text("title").notNull(),
    body: text("body").notNull(),
    revision: integer("revision").notNull().default(1),
    createdAt: text("created_at").notNull(),
    updatedBy: text("updated_by").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("employee_wiki_slug_idx").on(t.employeeId, t.slug)],
);
export type EmployeeWikiRow = typeof employeeWiki.$inferSelect;
