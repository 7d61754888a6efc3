import { and, gte, inArray, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { credentials, runnerRuntimes } from "../db/schema";

/** How often one isolate records a runner's runtimes (a lease poll can come every few seconds). */
const REFRESH_MS = 60_000;
/** A runtime offered within this window counts as on the host now. */
export const LIVE_RUNTIME_MS = 10 * 60_000;

const noted = new Map<string, { runtimes: string; at: number }>();

/**
 * Records the runtimes a runner's lease request names, at most once a minute per runner and isolate
 * (and at once when the set changes), off the lease's response path.
 */
export async function noteRunnerRuntimes(db: Db, runnerId: string, runtimes: readonly string[], now: Date): Promise<void> {
  const key = [...runtimes].sort().join(",");
  const last = noted.get(runnerId);
  if (last && last.runtimes === key && now.getTime() - last.at < REFRESH_MS) return;
  noted.set(runnerId, { runtimes: key, at: now.getTime() });
  if (runtimes.length === 0) return;
  const at = now.toISOString();
  await db
    .insert(runnerRuntimes)
    .values(runtimes.map((runtime) => ({ runnerId, runtime, lastSeenAt: at })))
    .onConflictDoUpdate({ target: [runnerRuntimes.runnerId, runnerRuntimes.runtime], set: { lastSeenAt: sql`excluded.last_seen_at` } });
}

/** Runtimes a live, unrevoked runner offered within the last ten minutes. */
export async function liveRuntimes(db: Db, now: Date): Promise<Set<string>> {
  const since = new Date(now.getTime() - LIVE_RUNTIME_MS).toISOString();
  const live = db.select({ id: credentials.id }).from(credentials).where(isNull(credentials.revokedAt));
  const rows = await db
    .selectDistinct({ runtime: runnerRuntimes.runtime })
    .from(runnerRuntimes)
    .where(and(gte(runnerRuntimes.lastSeenAt, since), inArray(runnerRuntimes.runnerId, live)))
    .all();
  return new Set(rows.map((r) => r.runtime));
}
