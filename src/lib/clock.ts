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

/**
 * How long this isolate keeps the test clock's offset: another isolate sees a clock move within
 * this time, this one at once (`rememberClockOffset` after the admin route writes it).
 */
export const CLOCK_CACHE_MS = 1_000;
let cachedOffset: { clock: Clock; until: number } | null = null;

/** Production never reads the offset row, so a stale test offset can never leak into it. */
export async function loadClock(env: Pick<Env, "ENVIRONMENT" | "DB">): Promise<Clock> {
  if (!testClockEnabled(env)) return systemClock;
  const now = Date.now();
  if (cachedOffset && cachedOffset.until > now) return cachedOffset.clock;
  const row = await getDb(env.DB).select().from(clockState).where(eq(clockState.id, 1)).get();
  return rememberClockOffset(row?.offsetMs ?? 0, now);
}

/** The offset this isolate just stored: later requests here use it without waiting for the cache to lapse. */
export function rememberClockOffset(offsetMs: number, now = Date.now()): Clock {
  // A clock holds no state but its offset, so requests within the window share one.
  const clock = cachedOffset?.clock.offsetMs === offsetMs ? cachedOffset.clock : clockWithOffset(offsetMs);
  cachedOffset = { clock, until: now + CLOCK_CACHE_MS };
  return clock;
}

/**
 * The instants the test clock may read. Every stored time is an ISO-8601 string compared as text,
 * so it must keep a four-digit year: past 9999 `toISOString()` yields `+010000-…`, which sorts
 * before `2026-…`. The latest settable now is the end of 9998, a year below 9999-12-31T23:59:59.999Z,
 * so deadlines computed from now (+60 s leases, +24 h queue limits, +7 day windows) stay valid too.
 */
export const CLOCK_EARLIEST_MS = Date.parse("1970-01-01T00:00:00.000Z");
export const CLOCK_LATEST_MS = Date.parse("9998-12-31T23:59:59.999Z");

/** Why a test clock reading `nowMs` is refused, or null when it is within bounds. */
export function clockBoundProblem(nowMs: number): string | null {
  if (nowMs >= CLOCK_EARLIEST_MS && nowMs <= CLOCK_LATEST_MS) return null;
  const reads = Number.isFinite(nowMs) && Math.abs(nowMs) <= 8.64e15 ? new Date(nowMs).toISOString() : String(nowMs);
  return `the clock would read ${reads}, outside ${new Date(CLOCK_EARLIEST_MS).toISOString()} … ${new Date(CLOCK_LATEST_MS).toISOString()}`;
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
