import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { GENESIS_HASH, entryHash, parsePayload, stageIdOf, type ChainEntry, type RoleTurnRef } from "./chain";

/** The chain's last entry; seq 0 with the genesis hash for an empty chain. */
export interface Head {
  seq: number;
  hash: string;
  eventId: number;
}

export const EMPTY_HEAD: Head = { seq: 0, hash: GENESIS_HASH, eventId: 0 };

export async function loadHead(db: Db): Promise<Head> {
  const [row] = await db.all<{ seq: number; hash: string; event_id: number }>(
    sql`SELECT seq, hash, event_id FROM audit_chain ORDER BY seq DESC LIMIT 1`,
  );
  return row ? { seq: row.seq, hash: row.hash, eventId: row.event_id } : EMPTY_HEAD;
}

interface StoredEvent {
  id: number;
  type: string;
  subject: string | null;
  payload: string;
  created_at: string;
}

/**
 * Seals the next events after `head` (at most `limit`), in id order, in one INSERT: the entries
 * are computed here and written as one JSON parameter, and the table's `audit_chain_next_link`
 * trigger refuses the statement unless each row is the next link, so a sealer that started from a
 * stale head writes nothing. Events with ids above the head are all committed (D1 has one writer and
 * AUTOINCREMENT ids only grow), so sealing by id is sealing in commit order.
 */
export async function sealPage(db: Db, head: Head, sealedAt: string, limit: number): Promise<{ head: Head; sealed: number }> {
  // The bounds are read through constant subqueries so SQLite compiles this ordered read once, not
  // on every page (docs/architecture.md, "Hot-path SQL"); the plan is the same rowid range.
  const events = await db.all<StoredEvent>(
    sql`SELECT id, type, subject, payload, created_at FROM events WHERE id > (SELECT ${head.eventId}) ORDER BY id LIMIT (SELECT ${limit})`,
  );
  if (events.length === 0) return { head, sealed: 0 };
  const parsed = events.map((e) => ({ ...e, payload: parsePayload(e.payload) }));
  const refs = await roleTurnRefs(db, parsed);
  const rows: { seq: number; event_id: number; prev_hash: string; hash: string; ref: string | null }[] = [];
  let prev = head;
  for (const e of parsed) {
    const ref = refs.get(e.id);
    const entry: ChainEntry = { ...e, seq: prev.seq + 1, prev_hash: prev.hash, ...(ref ? { ref } : {}) };
    const hash = await entryHash(entry);
    rows.push({ seq: entry.seq, event_id: e.id, prev_hash: prev.hash, hash, ref: ref ? JSON.stringify(ref) : null });
    prev = { seq: entry.seq, hash, eventId: e.id };
  }
  await db.run(sql`
    INSERT INTO audit_chain (seq, event_id, prev_hash, hash, ref, sealed_at)
    SELECT json_extract(value, '$.seq'), json_extract(value, '$.event_id'), json_extract(value, '$.prev_hash'),
           json_extract(value, '$.hash'), json_extract(value, '$.ref'), ${sealedAt}
    FROM json_each(${JSON.stringify(rows)}) ORDER BY key`);
  return { head: prev, sealed: rows.length };
}

/** The role-ledger rows (task chain heads at that stage) the page's stage-closing events refer to. */
async function roleTurnRefs(db: Db, events: readonly { id: number; type: string; payload: unknown }[]): Promise<Map<number, RoleTurnRef>> {
  const byStage = new Map<string, number[]>();
  for (const e of events) {
    const stageId = stageIdOf(e.type, e.payload);
    if (stageId) byStage.set(stageId, [...(byStage.get(stageId) ?? []), e.id]);
  }
  const refs = new Map<number, RoleTurnRef>();
  if (byStage.size === 0) return refs;
  const turns = await db.all<{ stage_id: string; task_id: string; seq: number; hash: string }>(
    sql`SELECT stage_id, task_id, seq, hash FROM role_turns WHERE stage_id IN (SELECT value FROM json_each(${JSON.stringify([...byStage.keys()])}))`,
  );
  for (const t of turns)
    for (const id of byStage.get(t.stage_id) ?? []) refs.set(id, { role_turn: { task_id: t.task_id, seq: t.seq, hash: t.hash } });
  return refs;
}
