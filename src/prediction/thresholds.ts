import { THRESHOLD_ORDER_GAP } from "./constants";
import { clamp, round9 } from "./num";

/** Seed 003 §3.2: the four error levels, by composite error against the current thresholds. */
export type ErrorCategory = "negligible" | "moderate" | "significant" | "critical";

/** Upper bounds (exclusive) of the first three categories (§3.9). */
export interface AdaptiveThresholds {
  negligible_upper: number;
  moderate_upper: number;
  significant_upper: number;
}

export const DEFAULT_THRESHOLDS: Readonly<AdaptiveThresholds> = Object.freeze({
  negligible_upper: 0.2,
  moderate_upper: 0.5,
  significant_upper: 0.8,
});

/** §3.9 / §8: the range each threshold may be calibrated within. */
export const THRESHOLD_BOUNDS: Readonly<Record<keyof AdaptiveThresholds, readonly [number, number]>> = Object.freeze({
  negligible_upper: [0.1, 0.4] as const,
  moderate_upper: [0.2, 0.85] as const,
  significant_upper: [0.4, 0.95] as const,
});

/** < negligible_upper: negligible; < moderate_upper: moderate; < significant_upper: significant; else critical (§3.2). */
export function categorize(compositeError: number, t: AdaptiveThresholds): ErrorCategory {
  if (compositeError < t.negligible_upper) return "negligible";
  if (compositeError < t.moderate_upper) return "moderate";
  if (compositeError < t.significant_upper) return "significant";
  return "critical";
}

export function isSignificantOrWorse(c: ErrorCategory): boolean {
  return c === "significant" || c === "critical";
}

/**
 * The thresholds within their bounds and in order (§3.9 "強制的な順序"). Each is clamped into its
 * range; then, from the top down, a threshold not below the next one is set 0.05 below it:
 * moderate first (it may move), then negligible against the (possibly moved) moderate. The bounds
 * survive: a moved moderate is ≥ 0.4 − 0.05 = 0.35 and a moved negligible ≥ 0.2 − 0.05 = 0.15. A value that
 * is not a finite number takes its default. Values are rounded to 9 decimals (0.5 + 0.05 is 0.55).
 */
export function normalizeThresholds(t: AdaptiveThresholds): AdaptiveThresholds {
  const pick = (k: keyof AdaptiveThresholds) => {
    const v = Number.isFinite(t[k]) ? t[k] : DEFAULT_THRESHOLDS[k];
    const [lo, hi] = THRESHOLD_BOUNDS[k];
    return round9(clamp(v, lo, hi));
  };
  const significant_upper = pick("significant_upper");
  let moderate_upper = pick("moderate_upper");
  let negligible_upper = pick("negligible_upper");
  if (moderate_upper >= significant_upper) moderate_upper = round9(significant_upper - THRESHOLD_ORDER_GAP);
  if (negligible_upper >= moderate_upper) negligible_upper = round9(moderate_upper - THRESHOLD_ORDER_GAP);
  return { negligible_upper, moderate_upper, significant_upper };
}

export function sameThresholds(a: AdaptiveThresholds, b: AdaptiveThresholds): boolean {
  return a.negligible_upper === b.negligible_upper && a.moderate_upper === b.moderate_upper && a.significant_upper === b.significant_upper;
}
