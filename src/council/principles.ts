import { and, desc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { governancePrinciples } from "../db/schema";
import { normalizeForScan } from "./normalize";
import { overlap } from "./overlap";

export type PrincipleRow = typeof governancePrinciples.$inferSelect;

export function principleView(p: PrincipleRow) {
  return {
    principle_id: p.id,
    statement: p.statement,
    source_session_id: p.sourceSessionId,
    confidence: p.confidence,
    status: p.status,
    created_at: p.createdAt,
    ...(p.revokedAt ? { revoked_at: p.revokedAt } : {}),
  };
}

function activePrinciples(db: Db) {
  return db
    .select()
    .from(governancePrinciples)
    .where(and(eq(governancePrinciples.status, "active")))
    .orderBy(desc(governancePrinciples.createdAt))
    .limit(1_000)
    .all();
}

/**
 * Active principles; with `q`, those that contain it or share vocabulary with it (overlap > 0),
 * most overlapping first.
 */
export async function queryPrinciples(db: Db, q?: string) {
  const rows = await activePrinciples(db);
  if (!q) return rows.map(principleView);
  const needle = normalizeForScan(q);
  return rows
    .map((p) => ({ p, score: normalizeForScan(p.statement).includes(needle) ? 1 : overlap(q, p.statement) }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score)
    .map((x) => ({ ...principleView(x.p), match: Math.round(x.score * 1000) / 1000 }));
}

/** The contradiction checker: the overlap of `text` with every active principle, highest first. */
export async function checkAgainstPrinciples(db: Db, text: string) {
  const rows = await activePrinciples(db);
  const overlaps = rows
    .map((p) => ({ principle_id: p.id, statement: p.statement, overlap: Math.round(overlap(text, p.statement) * 1000) / 1000 }))
    .sort((a, b) => b.overlap - a.overlap);
  return { max_overlap: overlaps[0]?.overlap ?? 0, overlaps };
}
