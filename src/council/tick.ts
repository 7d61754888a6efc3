import { and, isNotNull, lte, sql } from "drizzle-orm";
import { getDb } from "../db/client";
import { councilSessions } from "../db/schema";
import { getCouncilSession } from "../durable-objects/council-session-rpc";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { councilConfig } from "./config";
import { expirePrescreens } from "./proposals";
import { cryptoRandom } from "./random";
import { termTick } from "./term-store";
import { decayReputation } from "../nodes/reputation";
import { reputationConfig } from "../nodes/reputation-config";
import { flushPresence } from "../nodes/presence-store";

/**
 * The `council` tick has two parts on two schedules: hourly, the term check (seed 004
 * "council_term_check が毎時実行") with reputation decay; every minute, the sessions whose next deadline or debounced
 * progress check is due (a backstop for their own alarms) and prescreens that never answered.
 */
export async function councilTermsTick(env: Env, now: Date) {
  const db = getDb(env.DB);
  // Heartbeats held in presence go to D1 first (a backstop for the shards' own alarms, issue 26), so
  // the 48 h unreachability check and decay read every heartbeat.
  const presence = await flushPresence(env, now);
  const terms = await termTick(db, now, cryptoRandom);
  // Reputation decay runs with the hourly term check (once per node per UTC day, by its ledger reference).
  const initial = (await readSection(db, councilConfig)).initial_reputation;
  const decay = await decayReputation(db, now, await readSection(db, reputationConfig), initial);
  return { ...terms, reputation_decayed: decay.decayed, presence_flushed: presence.flushed };
}

export async function councilSessionsTick(env: Env, now: Date) {
  const db = getDb(env.DB);
  const due = await db
    .select({ id: councilSessions.id })
    .from(councilSessions)
    .where(and(isNotNull(councilSessions.nextCheckAt), lte(councilSessions.nextCheckAt, now.toISOString())))
    .orderBy(sql`${councilSessions.nextCheckAt}`)
    .limit(200)
    .all();
  const results = await Promise.allSettled(due.map((s) => getCouncilSession(env, s.id).check({ session_id: s.id, now: now.getTime() })));
  const failed = results.filter((r) => r.status === "rejected");
  for (const f of failed) console.error("council tick: a session check failed", (f as PromiseRejectedResult).reason);
  const prescreen_timeouts = await expirePrescreens(env, db, now, await readSection(db, councilConfig));
  return {
    sessions_due: due.length,
    sessions_changed: results.filter((r) => r.status === "fulfilled" && r.value.ok && r.value.changed).length,
    session_check_failures: failed.length,
    prescreen_timeouts,
  };
}
