/**
 * Full-text queries over the trigram FTS5 indexes of an employee's memory and wiki (the migration
 * `*_knowledge_fts.sql`). Trigram indexes match substrings in any script — Japanese text has no
 * spaces for a word tokenizer to split on — but only terms of 3+ characters; shorter ones become a
 * LIKE on the row. Every term must match. User text never reaches MATCH unquoted: each term is one
 * quoted string, so FTS5 syntax in a query (`OR`, `NEAR`, `*`, `:`) is just text.
 */
export interface FtsQuery {
  /** The MATCH expression, or null when no term is long enough for the trigram index. */
  match: string | null;
  /** LIKE patterns (escaped with `\`) for the short terms. */
  likes: string[];
}

const MAX_TERMS = 12;
// Control characters are never part of a term (a NUL makes MATCH fail with an error). The routes
// refuse them (422); callers that build a query themselves get them dropped here.
const CONTROL = /\p{Cc}/gu;

export function ftsQuery(q: string): FtsQuery {
  const terms = [...new Set(q.replace(CONTROL, " ").trim().split(/\s+/u).filter(Boolean))].slice(0, MAX_TERMS);
  const long = terms.filter((t) => [...t].length >= 3);
  const short = terms.filter((t) => [...t].length < 3);
  return {
    match: long.length ? long.map((t) => `"${t.replaceAll('"', '""')}"`).join(" AND ") : null,
    likes: short.map((t) => `%${t.replace(/[\\%_]/g, (c) => `\\${c}`)}%`),
  };
}
