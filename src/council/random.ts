/** A source of uniform numbers in [0, 1): injected so selection is deterministic in tests. */
export type Random = () => number;

/** Production randomness: 32 bits from the platform CSPRNG per draw. */
export const cryptoRandom: Random = () => crypto.getRandomValues(new Uint32Array(1))[0]! / 2 ** 32;

/** A small seeded PRNG (mulberry32) for tests and reproducible runs. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** An index in [0, n) from `random`, clamped so a source returning 1 cannot overflow. */
export function pickIndex(random: Random, n: number): number {
  return Math.min(n - 1, Math.floor(random() * n));
}

/** Fisher–Yates over a copy: the first `k` of the result are a uniform sample without replacement. */
export function shuffled<T>(items: readonly T[], random: Random): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = pickIndex(random, i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
