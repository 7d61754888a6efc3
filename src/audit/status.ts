import { sql } from "drizzle-orm";
import type { Db } from "../db/client";

export interface LagFigures {
  /** Entries measured. */
  n: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

/**
 * The sealing lag of entries seq (from, to]: sealed_at minus the event's created_at, in ms. The
 * event's time is taken when its request started, so this is an upper bound on commit-to-seal.
 */
export async function auditLag(db: Db, fromSeqExclusive: number, toSeq: number): Promise<LagFigures> {
  const rows = await db.all<{ sealed_at: string; created_at: string }>(sql`
    SELECT c.sealed_at, e.created_at FROM audit_chain c JOIN events e ON e.id = c.event_id
    WHERE c.seq > ${Math.max(0, fromSeqExclusive)} AND c.seq <= ${toSeq}`);
  return lagFigures(rows.map((r) => Date.parse(r.sealed_at) - Date.parse(r.created_at)));
}

export function lagFigures(lags: number[]): LagFigures {
  if (lags.length === 0) return { n: 0, p50: null, p99: null, max: null };
  const sorted = [...lags].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1]! };
}
