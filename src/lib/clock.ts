import { eq } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { clockState } from "../db/schema";
import type { Env } from "../env";

/**
 * All code reads time through a Clock. Outside production an admin test clock shifts it by a
 * stored offset so that 30-minute, 24-hour and 7-day rules can be exercised end to end.
 */
export interface Clock {
  readonly offsetMs: number;
  now(): Date;
  nowMs(): number;
}

export function clockWithOffset(offsetMs: number): Clock {
  return {
    offsetMs,
    nowMs: () => Date.now() + offsetMs,
    now: () => new Date(Date.now() + offsetMs),
  };
}

export const systemClock: Clock = clockWithOffset(0);

export function testClockEnabled(env: Pick<Env, "ENVIRONMENT">): boolean {
  return env.ENVIRONMENT !== "production";
}

/** Production never reads the offset row, so a stale test offset can never leak into it. */
export async function loadClock(env: Pick<Env, "ENVIRONMENT" | "DB">): Promise<Clock> {
  if (!testClockEnabled(env)) return systemClock;
  const row = await getDb(env.DB).select().from(clockState).where(eq(clockState.id, 1)).get();
  return clockWithOffset(row?.offsetMs ?? 0);
}

/** The test clock's new offset: moved forward by `advance_ms`, or set so that now reads `set`. */
export function offsetAfter(change: { advance_ms: number } | { set: string }, currentOffsetMs: number, realNowMs: number): number {
  return "advance_ms" in change ? currentOffsetMs + change.advance_ms : Date.parse(change.set) - realNowMs;
}

/** Returns the upsert un-executed, for a batch with the event that records the change. */
export function saveClockOffset(db: Db, offsetMs: number, at: Date) {
  const updatedAt = at.toISOString();
  return db
    .insert(clockState)
    .values({ id: 1, offsetMs, updatedAt })
    .onConflictDoUpdate({ target: clockState.id, set: { offsetMs, updatedAt } });
}
