import { getTableColumns, sql, type SQL } from "drizzle-orm";
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
export function insertWhere<T extends SQLiteTable>(db: Db, table: T, values: T["$inferInsert"], guard: SQL, onConflict?: SQL) {
  const columns = getTableColumns(table) as Record<string, { name: string; mapToDriverValue(v: unknown): unknown }>;
  const entries = Object.entries(values as Record<string, unknown>).filter(([, v]) => v !== undefined);
  const names = entries.map(([key]) => sql.identifier(columnOf(columns, key).name));
  const params = entries.map(([key, value]) => (value === null ? sql`NULL` : sql.param(value, columnOf(columns, key) as never)));
  return db.run(
    sql`INSERT INTO ${table} (${sql.join(names, sql`, `)}) SELECT ${sql.join(params, sql`, `)} WHERE ${guard}${onConflict ? sql` ${onConflict}` : sql``}`,
  );
}

function columnOf<C>(columns: Record<string, C>, key: string): C {
  const column = columns[key];
  if (!column) throw new Error(`insertWhere: no column '${key}'`);
  return column;
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
    sql`ON CONFLICT(dedupe_key) DO NOTHING`,
  );
}

/** Rows a `db.run(...)` statement changed, read from its D1 result inside a batch's results. */
export function rowsChanged(result: unknown): number {
  const changes = (result as { meta?: { changes?: number } } | undefined)?.meta?.changes;
  return typeof changes === "number" ? changes : 0;
}
