/**
 * Welford's online mean and variance (seed 003 §3.6). Plain data so a user model stores as JSON;
 * `pushStat` returns a new value and never changes its argument.
 */
export interface RunningStats {
  count: number;
  mean: number;
  m2: number;
}

export const EMPTY_STATS: RunningStats = Object.freeze({ count: 0, mean: 0, m2: 0 });

/**
 * push(x): count += 1; delta = x − mean; mean += delta / count; delta2 = x − mean; m2 += delta × delta2.
 * A value that is not a finite number is not an observation: the stats come back unchanged (one NaN
 * would otherwise poison the mean for good).
 */
export function pushStat(s: RunningStats, x: number): RunningStats {
  if (!Number.isFinite(x)) return s;
  const count = s.count + 1;
  const delta = x - s.mean;
  const mean = s.mean + delta / count;
  return { count, mean, m2: s.m2 + delta * (x - mean) };
}

/** Population variance m2 / count (§3.6); null before the first observation (unknown, not 0). */
export function variance(s: RunningStats): number | null {
  return s.count === 0 ? null : s.m2 / s.count;
}

/** The mean, or null before the first observation. */
export function meanOf(s: RunningStats): number | null {
  return s.count === 0 ? null : s.mean;
}
