import { and, desc, eq, sql, type SQL } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { employeeMemory, type EmployeeMemoryRow } from "../db/schema";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { label } from "../lib/validation";
import { ftsQuery } from "./fts";

/** One memory entry: free text (multi-line) and a few tags. */
export const memoryBody = z.strictObject({
  text: z
    .string()
    .trim()
    .min(1)
    .max(8_000)
    .refine((v) => v.isWellFormed() && !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u202A-\u202E\u2066-\u2069]/u.test(v), {
      message: "must not contain control characters, bidi overrides or lone surrogates",
    }),
  tags: z.array(label(64).regex(/^\S+$/, "a tag is one word")).max(20).default([]),
});
export type MemoryBody = z.infer<typeof memoryBody>;

export function memoryView(row: EmployeeMemoryRow, snippet?: string) {
  return {
    memory_id: row.id,
    employee_id: row.employeeId,
    text: row.text,
    tags: row.tags ? row.tags.split(" ") : [],
    created_by: row.createdBy,
    created_at: row.createdAt,
    ...(row.importance !== null ? { importance: row.importance } : {}),
    ...(snippet !== undefined ? { snippet } : {}),
  };
}

/** Adds an entry and its event in one batch (the FTS index follows by trigger). */
export async function addMemory(db: Db, employeeId: string, body: MemoryBody, actor: string, now: Date) {
  const id = newId("mem");
  const at = now.toISOString();
  const [inserted] = await db.batch([
    db
      .insert(employeeMemory)
      .values({ id, employeeId, text: body.text, tags: body.tags.join(" "), createdBy: actor, createdAt: at })
      .returning(),
    appendEvent(
      db,
      { type: "employee.memory_added", subject: employeeId, payload: { employee_id: employeeId, memory_id: id, by: actor } },
      now,
    ),
  ]);
  return memoryView(inserted[0]!);
}

/**
 * The employee's best-matching entries (bm25 over text and tags), or the newest ones without a
 * query. Only this employee's rows are ever read.
 */
export async function searchMemory(db: Db, employeeId: string, q: string | undefined, limit: number) {
  const query = q ? ftsQuery(q) : { match: null, likes: [] };
  const likes: SQL[] = query.likes.map((p) => sql`(m.text LIKE ${p} ESCAPE '\\' OR m.tags LIKE ${p} ESCAPE '\\')`);
  if (query.match) {
    const rows = await db.all<Record<string, unknown>>(sql`
      SELECT m.*, snippet(employee_memory_fts, 0, '[', ']', '…', 64) AS snippet
      FROM employee_memory_fts JOIN employee_memory m ON m.seq = employee_memory_fts.rowid
      WHERE employee_memory_fts MATCH ${query.match} AND m.employee_id = ${employeeId}
      ${likes.length ? sql`AND ${sql.join(likes, sql` AND `)}` : sql``}
      ORDER BY bm25(employee_memory_fts) LIMIT ${limit}`);
    return rows.map((r) => memoryView(fromRaw(r), String(r.snippet ?? "")));
  }
  const where = and(
    eq(employeeMemory.employeeId, employeeId),
    ...query.likes.map((p) => sql`(${employeeMemory.text} LIKE ${p} ESCAPE '\\' OR ${employeeMemory.tags} LIKE ${p} ESCAPE '\\')`),
  );
  const rows = await db
    .select()
    .from(employeeMemory)
    .where(where)
    .orderBy(desc(employeeMemory.createdAt), desc(employeeMemory.seq))
    .limit(limit);
  return rows.map((r) => memoryView(r));
}

function fromRaw(r: Record<string, unknown>): EmployeeMemoryRow {
  return {
    seq: Number(r.seq),
    id: String(r.id),
    employeeId: String(r.employee_id),
    text: String(r.text),
    tags: String(r.tags ?? ""),
    createdBy: String(r.created_by),
    createdAt: String(r.created_at),
    importance: r.importance === null || r.importance === undefined ? null : Number(r.importance),
  };
}
