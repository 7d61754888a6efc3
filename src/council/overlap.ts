/**
 * The contradiction checker's overlap measure (seed 004 "矛盾チェッカー"): how much of a text's
 * vocabulary a principle shares. Token Jaccard over ASCII words, Jaccard over character bigrams for
 * CJK runs (which have no spaces), and the larger of the two.
 */
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+/gu;

export function asciiWords(text: string): Set<string> {
  return new Set(
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[a-z0-9]+/g) ?? [],
  );
}

/** Bigrams inside each CJK run; a one-character run counts as itself. */
export function cjkBigrams(text: string): Set<string> {
  const out = new Set<string>();
  for (const run of text.normalize("NFKC").match(CJK_RUN) ?? []) {
    const chars = [...run];
    if (chars.length === 1) out.add(chars[0]!);
    for (let i = 0; i + 1 < chars.length; i++) out.add(chars[i]! + chars[i + 1]!);
  }
  return out;
}

/** |A ∩ B| / |A ∪ B|; two empty sets share nothing, so 0. */
export function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 0;
  let shared = 0;
  for (const x of a) if (b.has(x)) shared++;
  return shared / (a.size + b.size - shared);
}

export function overlap(a: string, b: string): number {
  return Math.max(jaccard(asciiWords(a), asciiWords(b)), jaccard(cjkBigrams(a), cjkBigrams(b)));
}
