import { asc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { guarded } from "../db/guard";
import { playbookEntries, playbooks, type PlaybookEntryRow } from "../db/schema";
import { canonicalPlaybook, playbookEntrySchema, sortEntries, type Playbook, type PlaybookEntry } from "./playbook";

/**
 * The playbook in D1 (seed 003 §12.3 store.rs): one row per entry, every gene field a column, and a
 * head row per employee whose `revision` every write bumps, guarded on the revision the writer read.
 * Rows are read back through the entry schema, so a row the code cannot vouch for fails loudly
 * instead of being injected into a prompt.
 */
export interface StoredPlaybook {
  playbook: Playbook;
  /** 0 when the employee has never had an entry. */
  revision: number;
}

export function entryOfRow(row: PlaybookEntryRow): PlaybookEntry {
  return playbookEntrySchema.parse({
    entry_id: row.entryId,
    agent_id: row.agentId,
    category: row.category,
    signals_match: row.signalsMatch,
    content: row.content,
    eval_cases: row.evalCases,
    assertions: row.assertions,
    failure_history: row.failureHistory,
    applications: row.applications,
    success_streak: row.successStreak,
    derived_from: row.derivedFrom,
    state: row.state,
    state_reason: row.stateReason,
    state_since: row.stateSince,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    version: row.version,
  });
}

function rowOfEntry(e: PlaybookEntry) {
  return {
    agentId: e.agent_id,
    entryId: e.entry_id,
    category: e.category,
    signalsMatch: e.signals_match,
    content: e.content,
    evalCases: e.eval_cases,
    assertions: e.assertions as unknown as Record<string, unknown>[],
    failureHistory: e.failure_history as unknown as Record<string, unknown>[],
    applications: e.applications as unknown as Record<string, unknown>[],
    successStreak: e.success_streak,
    derivedFrom: e.derived_from as unknown as Record<string, unknown>[],
    state: e.state,
    stateReason: e.state_reason,
    stateSince: e.state_since,
    createdAt: e.created_at,
    updatedAt: e.updated_at,
    version: e.version,
  };
}

export async function loadPlaybook(db: Db, agentId: string): Promise<StoredPlaybook> {
  const [head, rows] = await Promise.all([
    db.select().from(playbooks).where(eq(playbooks.agentId, agentId)).get(),
    db.select().from(playbookEntries).where(eq(playbookEntries.agentId, agentId)).orderBy(asc(playbookEntries.entryId)).all(),
  ]);
  return { playbook: { agent_id: agentId, entries: sortEntries(rows.map(entryOfRow)) }, revision: head?.revision ?? 0 };
}

/**
 * The statements that write `changed` entries over the playbook read at `read.revision`, for the
 * caller's batch: the head first (a row that moved on makes it NULL into NOT NULL, or the first
 * insert collide, and the whole batch aborts), then one upsert per entry. Entries not passed are
 * left exactly as they are.
 */
export function playbookWrite(
  db: Db,
  agentId: string,
  readRevision: number,
  changed: readonly PlaybookEntry[],
  now: Date,
): BatchItem<"sqlite">[] {
  const at = now.toISOString();
  const head =
    readRevision === 0
      ? db.insert(playbooks).values({ agentId, revision: 1, updatedAt: at })
      : db
          .update(playbooks)
          .set({ revision: sql`${guarded(sql`${playbooks.revision} = ${readRevision}`, readRevision + 1)}`, updatedAt: at })
          .where(eq(playbooks.agentId, agentId));
  const upserts = changed.map((e) => {
    if (e.agent_id !== agentId) throw new Error(`playbookWrite: entry ${e.entry_id} belongs to ${e.agent_id}, not ${agentId}`);
    const row = rowOfEntry(playbookEntrySchema.parse(e));
    const { agentId: _a, entryId: _e, ...set } = row;
    return db
      .insert(playbookEntries)
      .values(row)
      .onConflictDoUpdate({ target: [playbookEntries.agentId, playbookEntries.entryId], set });
  });
  return [head, ...upserts];
}

/** Whether a batch failed because the playbook it read had moved on (another writer came first). */
export function isPlaybookConflict(err: unknown): boolean {
  const parts: string[] = [];
  for (let e: unknown = err, i = 0; e && i < 5; i++) {
    parts.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  const text = parts.join(" | ");
  return (
    (text.includes("NOT NULL constraint failed") && text.includes("playbooks.revision")) ||
    /UNIQUE constraint failed: playbooks\./.test(text)
  );
}

/** The entries of `next` that differ from `before` (by their canonical JSON), for a write. */
export function changedEntries(before: Playbook, next: Playbook): PlaybookEntry[] {
  const bytes = (e: PlaybookEntry) => canonicalPlaybook({ agent_id: e.agent_id, entries: [e] });
  const old = new Map(before.entries.map((e) => [e.entry_id, bytes(e)]));
  return next.entries.filter((e) => old.get(e.entry_id) !== bytes(e));
}
