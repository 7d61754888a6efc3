import { sql, type SQL } from "drizzle-orm";

/**
 * Makes one statement of a `db.batch([...])` abort the whole batch when `condition` is false: the
 * value written is NULL into a NOT NULL column, SQLite raises a constraint error, and D1 rolls the
 * batch back. D1 has no interactive transactions, and a conditional UPDATE that simply matches no
 * row would let the rest of the batch go through; this is how a batch becomes all-or-nothing on a
 * check (a version, a cap, a rate limit) made at write time.
 */
export function guarded(condition: SQL, value: SQL | string | number): SQL {
  return sql`CASE WHEN ${condition} THEN ${value} ELSE NULL END`;
}

/** Whether a batch failed because a `guarded` value was NULL in `column` (e.g. "council_sessions.version"). */
export function isGuardFailure(err: unknown, column: string): boolean {
  const text = errorText(err);
  return text.includes("NOT NULL constraint failed") && text.includes(column);
}

export function isUniqueFailure(err: unknown, table: string): boolean {
  const text = errorText(err);
  return /UNIQUE constraint failed|PRIMARY KEY/.test(text) && text.includes(table);
}

/** An error's message with those of its causes (drizzle wraps D1's error, which names the constraint, as the cause). */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, i = 0; e && i < 5; i++) {
    parts.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(" | ");
}
