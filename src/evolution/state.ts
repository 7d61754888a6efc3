import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { guarded } from "../db/guard";
import { evolutionState } from "../db/schema";
import { DEFAULT_THRESHOLDS, newMetaCognition, type AdaptiveThresholds, type MetaCognitionState } from "../prediction";

/** An employee's evolution bookkeeping as the code uses it (a missing row is the cold state). */
export interface EvolutionState {
  agent_id: string;
  thresholds: AdaptiveThresholds;
  metacognition: MetaCognitionState;
  consecutive_significant: number;
  predictions: number;
  last_trigger_at: string | null;
  last_trigger_kind: string | null;
  cooldown_until: string | null;
  /** 0 when no row exists yet. */
  version: number;
}

export async function loadEvolutionState(db: Db, agentId: string): Promise<EvolutionState> {
  const row = await db.select().from(evolutionState).where(eq(evolutionState.agentId, agentId)).get();
  if (!row) {
    return {
      agent_id: agentId,
      thresholds: { ...DEFAULT_THRESHOLDS },
      metacognition: newMetaCognition(DEFAULT_THRESHOLDS),
      consecutive_significant: 0,
      predictions: 0,
      last_trigger_at: null,
      last_trigger_kind: null,
      cooldown_until: null,
      version: 0,
    };
  }
  return {
    agent_id: agentId,
    thresholds: row.thresholds as unknown as AdaptiveThresholds,
    metacognition: row.metacognition as unknown as MetaCognitionState,
    consecutive_significant: row.consecutiveSignificant,
    predictions: row.predictions,
    last_trigger_at: row.lastTriggerAt,
    last_trigger_kind: row.lastTriggerKind,
    cooldown_until: row.cooldownUntil,
    version: row.version,
  };
}

/**
 * The statement that saves `next` over the state read at `read.version`, for a caller's batch. A row
 * that moved on meanwhile aborts the whole batch (the guarded version is NULL into NOT NULL, or the
 * insert of a first row collides), so two writers never lose each other's change; the caller retries.
 */
export function saveEvolutionState(db: Db, read: Pick<EvolutionState, "version">, next: EvolutionState, now: Date) {
  const at = now.toISOString();
  const values = {
    thresholds: next.thresholds as unknown as Record<string, number>,
    metacognition: next.metacognition as unknown as Record<string, unknown>,
    consecutiveSignificant: next.consecutive_significant,
    predictions: next.predictions,
    lastTriggerAt: next.last_trigger_at,
    lastTriggerKind: next.last_trigger_kind,
    cooldownUntil: next.cooldown_until,
    updatedAt: at,
  };
  if (read.version === 0) return db.insert(evolutionState).values({ agentId: next.agent_id, ...values, version: 1 });
  return db
    .update(evolutionState)
    .set({ ...values, version: sql`${guarded(sql`${evolutionState.version} = ${read.version}`, read.version + 1)}` })
    .where(eq(evolutionState.agentId, next.agent_id));
}

/** Whether a batch failed because the evolution state it read had moved on. */
export function isStateConflict(text: string): boolean {
  return (
    (text.includes("NOT NULL constraint failed") && text.includes("evolution_state.version")) ||
    /UNIQUE constraint failed: evolution_state/.test(text)
  );
}
