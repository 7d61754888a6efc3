/**
 * Rounds to 9 decimals. Derived values are kept at this precision so that what the seed writes as an
 * exact decimal compares as one at a category boundary: 0.7 − 0.3 is 0.39999999999999997 in binary,
 * and 0.4 × (0.7 − 0.2) would fall just below the 0.2 boundary of "moderate".
 */
export function round9(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

export function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

export const clamp01 = (x: number) => clamp(x, 0, 1);
