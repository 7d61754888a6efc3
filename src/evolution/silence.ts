import { asc, eq, sql } from "drizzle-orm";
import { getDb } from "../db/client";
import { employees, evolutionState } from "../db/schema";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { appendEvent } from "../lib/events";
import { effectiveEvolution, evolutionConfig } from "./config";
import { isStateConflict, loadEvolutionState, saveEvolutionState } from "./state";

/**
 * The silence breaker (seed 003 §5.2): an employee whose evolution has not been triggered for more
 * than `max_silence_hours` (counted from its creation when it never was) gets a warning event, and
 * its last-trigger time is reset to now so the warning repeats only after another silent period.
 * From the `evolution` tick; bounded per tick.
 */
export async function silenceBreakerTick(env: Env, now: Date, limit = 200) {
  const db = getDb(env.DB);
  const global = await readSection(db, evolutionConfig);
  const rows = await db
    .select({ id: employees.id, createdAt: employees.createdAt, config: employees.config, last: evolutionState.lastTriggerAt })
    .from(employees)
    .leftJoin(evolutionState, eq(evolutionState.agentId, employees.id))
    .orderBy(asc(sql`COALESCE(${evolutionState.lastTriggerAt}, ${employees.createdAt})`))
    .limit(limit)
    .all();
  let warned = 0;
  for (const row of rows) {
    const cfg = effectiveEvolution(global, row.config?.evolution);
    const since = Date.parse(row.last ?? row.createdAt);
    const hours = (now.getTime() - since) / 3_600_000;
    if (hours <= cfg.max_silence_hours) continue;
    const state = await loadEvolutionState(db, row.id);
    try {
      await db.batch([
        saveEvolutionState(db, state, { ...state, last_trigger_at: now.toISOString(), last_trigger_kind: "silence_breaker" }, now),
        appendEvent(
          db,
          {
            type: "evolution.silence_breaker",
            subject: row.id,
            payload: {
              agent_id: row.id,
              hours_since_last_trigger: Math.round(hours * 10) / 10,
              max_silence_hours: cfg.max_silence_hours,
              last_trigger_at: row.last,
            },
          },
          now,
        ),
      ]);
      warned++;
    } catch (err) {
      // A prediction or trigger saved the state meanwhile: this employee was not silent after all.
      if (!isStateConflict(String(err) + String((err as { cause?: unknown })?.cause ?? ""))) throw err;
    }
  }
  return { silence_warnings: warned };
}
