import { getTableColumns, is, SQL, sql, type AnyColumn } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { events } from "../db/schema";
import type { NewEvent } from "./events";

/**
 * `INSERT INTO t (…) SELECT … WHERE <guard>`: an insert that happens only if the guard holds when
 * the statement runs. D1 has no interactive transactions, so a change and the rows that record it
 * are put in one `db.batch([...])` with the same guard on each, the guarded inserts *before* the
 * guarded update that makes the guard false. Inside the batch every statement sees the same state,
 * so either all of them land or none does (a lost race leaves no stray event behind).
 * Values go through each column's own encoder (json, boolean), exactly as drizzle's insert would.
 */
export function insertWhere<T extends SQLiteTable>(db: Db, table: T, values: T["$inferInsert"], guard: SQL) {
  const given = values as Record<string, unknown>;
  const columns = Object.entries(getTableColumns(table)) as [string, AnyColumn][];
  for (const key of Object.keys(given)) if (!columns.some(([k]) => k === key)) throw new Error(`insertWhere: no column '${key}'`);
  // drizzle's INSERT … SELECT lists every insertable column in table order; fill them the way its
  // VALUES path does (value, else the column default, else NULL).
  const selected = columns
    .filter(([, col]) => !(col as AnyColumn & { shouldDisableInsert(): boolean }).shouldDisableInsert())
    .map(([key, col]) => {
      const value = given[key];
      if (value === null) return sql`NULL`;
      if (value !== undefined) return sql.param(value, col);
      if (col.default !== null && col.default !== undefined) return is(col.default, SQL) ? col.default : sql.param(col.default, col);
      return sql`NULL`;
    });
  return db.insert(table).select(sql`SELECT ${sql.join(selected, sql`, `)} WHERE ${guard}`);
}

/** `appendEvent` that lands only when `guard` holds (see insertWhere); idempotent by dedupeKey too. */
export function appendEventWhere(db: Db, event: NewEvent, at: Date, guard: SQL) {
  return insertWhere(
    db,
    events,
    {
      type: event.type,
      subject: event.subject ?? null,
      payload: event.payload ?? {},
      createdAt: at.toISOString(),
      dedupeKey: event.dedupeKey ?? null,
    },
    guard,
  ).onConflictDoNothing({ target: events.dedupeKey });
}

/**
 * Rows a `db.run(...)` statement changed, read from its D1 result inside a batch's results. D1 counts
 * the rows its triggers wrote too (the `topology_inputs` token, migrations/0009), so "it landed" is
 * `> 0`, never `=== 1`.
 */
export function rowsChanged(result: unknown): number {
  const changes = (result as { meta?: { changes?: number } } | undefined)?.meta?.changes;
  return typeof changes === "number" ? changes : 0;
}
