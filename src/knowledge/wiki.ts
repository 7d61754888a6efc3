import { and, eq, sql, type SQL } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { employeeWiki, type EmployeeWikiRow } from "../db/schema";
import { notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { label } from "../lib/validation";
import { ftsQuery } from "./fts";

/** The same slug rule the crewplane MCP server's `wiki_read` accepts. */
export const wikiSlug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "a wiki slug: letters, digits, '.', '_' and '-'");

export const wikiBody = z.strictObject({
  title: label(200),
  body: z
    .string()
    .min(1)
    .max(64 * 1024)
    .refine((v) => v.isWellFormed() && !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u202A-\u202E\u2066-\u2069]/u.test(v), {
      message: "must not contain control characters, bidi overrides or lone surrogates",
    }),
});
export type WikiBody = z.infer<typeof wikiBody>;

export function wikiView(row: EmployeeWikiRow) {
  return {
    employee_id: row.employeeId,
    slug: row.slug,
    title: row.title,
    body: row.body,
    revision: row.revision,
    created_at: row.createdAt,
    updated_by: row.updatedBy,
    updated_at: row.updatedAt,
  };
}

/** Creates or replaces a page in one statement (a concurrent PUT bumps the revision, never loses one). */
export async function putWikiPage(db: Db, employeeId: string, slug: string, body: WikiBody, actor: string, now: Date) {
  const at = now.toISOString();
  const [written] = await db.batch([
    db
      .insert(employeeWiki)
      .values({ employeeId, slug, title: body.title, body: body.body, revision: 1, createdAt: at, updatedBy: actor, updatedAt: at })
      .onConflictDoUpdate({
        target: [employeeWiki.employeeId, employeeWiki.slug],
        set: { title: body.title, body: body.body, revision: sql`${employeeWiki.revision} + 1`, updatedBy: actor, updatedAt: at },
      })
      .returning(),
    appendEvent(db, { type: "employee.wiki_updated", subject: employeeId, payload: { employee_id: employeeId, slug, by: actor } }, now),
  ]);
  const row = written[0]!;
  return { page: wikiView(row), created: row.revision === 1 };
}

export async function readWikiPage(db: Db, employeeId: string, slug: string) {
  const row = await db
    .select()
    .from(employeeWiki)
    .where(and(eq(employeeWiki.employeeId, employeeId), eq(employeeWiki.slug, slug)))
    .get();
  if (!row) throw notFound(`wiki page ${slug}`);
  return wikiView(row);
}

/** Pages matching the query (bm25 over title and body) with a snippet; without a query, all by slug. */
export async function searchWiki(db: Db, employeeId: string, q: string | undefined, limit: number) {
  const query = q ? ftsQuery(q) : { match: null, likes: [] };
  const likes: SQL[] = query.likes.map((p) => sql`(w.title LIKE ${p} ESCAPE '\\' OR w.body LIKE ${p} ESCAPE '\\')`);
  const rows = query.match
    ? await db.all<Record<string, unknown>>(sql`
        SELECT w.slug, w.title, w.updated_at, snippet(employee_wiki_fts, 1, '[', ']', '…', 64) AS snippet
        FROM employee_wiki_fts JOIN employee_wiki w ON w.seq = employee_wiki_fts.rowid
        WHERE employee_wiki_fts MATCH ${query.match} AND w.employee_id = ${employeeId}
        ${likes.length ? sql`AND ${sql.join(likes, sql` AND `)}` : sql``}
        ORDER BY bm25(employee_wiki_fts) LIMIT ${limit}`)
    : await db.all<Record<string, unknown>>(sql`
        SELECT w.slug, w.title, w.updated_at, substr(w.body, 1, 160) AS snippet FROM employee_wiki w
        WHERE w.employee_id = ${employeeId} ${likes.length ? sql`AND ${sql.join(likes, sql` AND `)}` : sql``}
        ORDER BY w.slug LIMIT ${limit}`);
  return rows.map((r) => ({
    slug: String(r.slug),
    title: String(r.title),
    snippet: String(r.snippet ?? ""),
    updated_at: String(r.updated_at),
  }));
}
