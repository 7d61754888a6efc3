/**
 * Near-duplicate detection for playbook entries (seed 003 §12.3 dedup.rs): character n-gram cosine
 * similarity, refused at NEAR_DUP_COSINE = 0.92 or more. The value is deliberately conservative: a
 * wrong merge silently loses a different rule, which is worse than keeping one redundant entry. A hit
 * refuses the write and is recorded by the caller; nothing is ever dropped silently.
 */
export const NEAR_DUP_COSINE = 0.92;

/** Character n-gram length of the dedup vectors (code points, over the dedup key). */
export const DEDUP_NGRAM = 3;

/**
 * The entry's dedup key: its content NFKC-normalized, lower-cased, with punctuation and symbols
 * dropped and whitespace runs collapsed. Two contents with one key say the same thing; the champion
 * fingerprint (§12.5.3) hashes these keys, so rewording punctuation does not make a new champion.
 */
export function dedupKey(content: string): string {
  return content
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[\p{P}\p{S}]+/gu, " ")
    .replace(/\s+/gu, " ")
    .trim();
}

/** Character n-grams of `text` (code points) with their counts; a text shorter than n is one gram. */
export function charNgrams(text: string, n = DEDUP_NGRAM): Map<string, number> {
  const cps = Array.from(text);
  const grams = new Map<string, number>();
  if (cps.length === 0) return grams;
  if (cps.length < n) {
    grams.set(cps.join(""), 1);
    return grams;
  }
  for (let i = 0; i + n <= cps.length; i++) {
    const g = cps.slice(i, i + n).join("");
    grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  return grams;
}

/** Cosine similarity of two count vectors; 0 when either is empty (nothing in common to measure). */
export function cosine(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (const [g, x] of a) {
    na += x * x;
    const y = b.get(g);
    if (y !== undefined) dot += x * y;
  }
  for (const y of b.values()) nb += y * y;
  // Rounded to 9 decimals so an exact decimal compares as one at the threshold.
  return Math.round((dot / Math.sqrt(na * nb)) * 1e9) / 1e9;
}

/** Character n-gram cosine similarity of two contents, over their dedup keys. */
export function contentSimilarity(a: string, b: string): number {
  return cosine(charNgrams(dedupKey(a)), charNgrams(dedupKey(b)));
}

/** The threshold decision, on its own so its boundary is tested exactly: ≥ 0.92 is a near duplicate. */
export function isNearDuplicate(similarity: number): boolean {
  return similarity >= NEAR_DUP_COSINE;
}

export interface NearDuplicate {
  entry_id: string;
  similarity: number;
}

/**
 * The most similar of `others` when it is a near duplicate of `content` (ties: the smaller id), else
 * null. `others` is what the caller compares against (the agent's non-retired entries).
 */
export function findNearDuplicate(content: string, others: readonly { entry_id: string; content: string }[]): NearDuplicate | null {
  const mine = charNgrams(dedupKey(content));
  let best: NearDuplicate | null = null;
  for (const o of others) {
    const similarity = cosine(mine, charNgrams(dedupKey(o.content)));
    if (!isNearDuplicate(similarity)) continue;
    if (!best || similarity > best.similarity || (similarity === best.similarity && o.entry_id < best.entry_id))
      best = { entry_id: o.entry_id, similarity };
  }
  return best;
}
