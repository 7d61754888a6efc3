import * as z from "zod";

/** API.md paging: `limit` defaults to 50, at most 500. */
const pageLimit = z.coerce.number().int().min(1).max(500).default(50);

/** `limit` and a numeric `cursor` (the last id seen), for feeds keyed by an increasing integer id. */
export const pageQuery = z.object({
  limit: pageLimit,
  cursor: z.string().regex(/^\d+$/, "cursor must come from a previous next_cursor").optional(),
});

/** A sort key: the values of the ORDER BY columns of the last row of a page. */
export type CursorKey = readonly (string | number)[];

/** The key as an opaque, URL-safe cursor (base64url of its JSON), so clients never build one. */
export function encodeCursor(key: CursorKey): string {
  const bytes = new TextEncoder().encode(JSON.stringify(key));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeCursorText(cursor: string): unknown {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error("not base64url");
  const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
}

/**
 * `limit` and an opaque keyset `cursor` whose decoded key must match `key` (a zod tuple of the
 * ORDER BY columns). A cursor that does not decode is a 422 naming `cursor`, never a 500.
 */
export function keysetPageQuery<K extends z.ZodType<CursorKey>>(key: K) {
  const cursor = z
    .string()
    .max(1_024)
    .transform((text, ctx) => {
      try {
        return decodeCursorText(text);
      } catch {
        ctx.addIssue({ code: "custom", message: "cursor must come from a previous next_cursor" });
        return z.NEVER;
      }
    })
    .pipe(key);
  return z.object({ limit: pageLimit, cursor: cursor.optional() });
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/**
 * Cuts a page from rows fetched with `LIMIT limit + 1`: the extra row only says whether more exist,
 * so `next_cursor` is null exactly on the last page (never a cursor to an empty page).
 */
export function takePage<T>(rows: readonly T[], limit: number, keyOf: (row: T) => CursorKey): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null };
}
