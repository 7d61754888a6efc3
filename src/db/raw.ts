import type { SQL } from "drizzle-orm";
import type { Db } from "./client";

/**
 * A raw SQL statement usable inside `db.batch([...])`. drizzle 0.45's D1 batch reads a prepared
 * `stmt` that its raw queries (`db.run(sql…)`, `db.all(sql…)`) never create when they have
 * parameters, so it throws ("reading 'bind'"); this gives them one. Outside a batch they behave
 * exactly like `db.run` / `db.all`.
 */
export function batchable<T = unknown>(db: Db, query: SQL, mode: "run" | "all" = "run") {
  const item = mode === "all" ? db.all<T>(query) : db.run(query);
  const built = item.getQuery();
  Object.assign(item, { stmt: db.$client.prepare(built.sql) });
  return item;
}
