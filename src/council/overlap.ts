/**
 * The contradiction checker's overlap measure (seed 004 "矛盾チェッカー"): how much of a text's
 * vocabulary a principle holds, |T ∩ P| / |T| over content terms. A proposer reads it directly:
 * 0.8 means four fifths of what the proposal talks about is already in that principle. Unlike
 * Jaccard it is not diluted by a long principle (a statement ten times the text's length held
 * all of the text and still scored 0.09). Function words are not vocabulary: they would make any
 * English text "overlap" every principle.
 *
 * Terms: words outside CJK runs (letters and digits, lower case, two or more characters, not a
 * function word), and character bigrams inside CJK runs, which have no spaces; a bigram written
 * only in hiragana (particles, endings: して, ます) is grammar, not vocabulary, and is left out.
 */
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30FC]+/gu;
const HIRAGANA_ONLY = /^\p{Script=Hiragana}+$/u;
const WORD = /[\p{L}\p{N}]+/gu;

// English function words (articles, pronouns, auxiliaries, prepositions, conjunctions).
const STOPWORDS = new Set(
  (
    "a an and are as at be been being but by can could did do does doing for from had has have having he her here hers him his how " +
    "i if in into is it its itself just me more most my no nor not of off on once only or other our ours out over own same she " +
    "should so some such than that the their theirs them then there these they this those through to too under until up us very " +
    "was we were what when where which while who whom why will with would you your yours about after again against all any before " +
    "below between both during each few further also via per shall must may might"
  ).split(" "),
);

function prepared(text: string): string {
  return text.normalize("NFKC").toLowerCase();
}

/** Content words outside CJK runs. */
export function words(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of prepared(text).replace(CJK_RUN, " ").match(WORD) ?? []) {
    if ([...w].length >= 2 && !STOPWORDS.has(w)) out.add(w);
  }
  return out;
}

/** Bigrams inside each CJK run (a one-character run counts as itself), hiragana-only ones left out. */
export function cjkBigrams(text: string): Set<string> {
  const out = new Set<string>();
  const keep = (term: string) => {
    if (!HIRAGANA_ONLY.test(term)) out.add(term);
  };
  for (const run of prepared(text).match(CJK_RUN) ?? []) {
    const chars = [...run];
    if (chars.length === 1) keep(chars[0]!);
    for (let i = 0; i + 1 < chars.length; i++) keep(chars[i]! + chars[i + 1]!);
  }
  return out;
}

/** A text's vocabulary: its content words and CJK bigrams, one set. */
export function vocabulary(text: string): Set<string> {
  return new Set([...words(text), ...cjkBigrams(text)]);
}

/** |A ∩ B| / |A|: the share of A found in B; an empty A shares nothing, so 0. */
export function containment(a: Set<string>, b: Set<string>): number {
  if (a.size === 0) return 0;
  let shared = 0;
  for (const x of a) if (b.has(x)) shared++;
  return shared / a.size;
}

/** How much of `text`'s vocabulary `principle` holds, in [0, 1]. */
export function overlap(text: string, principle: string): number {
  return containment(vocabulary(text), vocabulary(principle));
}
