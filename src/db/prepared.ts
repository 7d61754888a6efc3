import { fillPlaceholders, sql, type Query } from "drizzle-orm";
import type { Db } from "./client";

/** A named placeholder for `preparedOnce` statements. */
export const named = (name: string) => sql.placeholder(name);

/**
 * A statement built through drizzle once per isolate (with `named` placeholders) and bound per call
 * straight to D1. For hot paths: building a query through drizzle's builder on every request was a
 * fifth of a runner lease's CPU (issue 26 item 5). The values fill the placeholders; JSON columns
 * take the text drizzle would write (wrap their placeholder in `sql` so it is bound as given, and a
 * missing value as NULL).
 */
export function preparedOnce(build: (db: Db) => { toSQL(): Query }): (db: Db, values: Record<string, unknown>) => D1PreparedStatement {
  const built = new WeakMap<Db, Query>();
  return (db, values) => {
    let query = built.get(db);
    if (!query) {
      query = build(db).toSQL();
      built.set(db, query);
    }
    return db.$client.prepare(query.sql).bind(...fillPlaceholders(query.params, values));
  };
}
