/**
 * Text signals for the prediction engine (seed 003 §3.5, §3.7): ASCII words, CJK character bigrams,
 * language, Jaccard distance. One pass over code points with numeric ranges, no regular expressions
 * per character, so a 20-turn conversation stays far below the seed's 1 ms per step.
 */

/** Han ideographs (CJK Unified Ideographs, extensions A–H, compatibility ideographs), 々 and 〇. */
export function isHan(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x20000 && cp <= 0x323af) ||
    cp === 0x3005 ||
    cp === 0x3007
  );
}

export function isHiragana(cp: number): boolean {
  return cp >= 0x3041 && cp <= 0x309f;
}

/** Katakana, the prolonged sound mark ー, small phonetic extensions and half-width katakana; not the middle dot ・. */
export function isKatakana(cp: number): boolean {
  return (cp >= 0x30a0 && cp <= 0x30ff && cp !== 0x30fb) || (cp >= 0x31f0 && cp <= 0x31ff) || (cp >= 0xff66 && cp <= 0xff9f);
}

/**
 * Characters that form CJK bigrams: Han and katakana. Hiragana is left out on purpose: in Japanese it
 * carries mostly grammar (です, ます, して), whose bigrams would crowd out the content words.
 */
function isBigramChar(cp: number): boolean {
  return isHan(cp) || isKatakana(cp);
}

function isAsciiAlnum(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a);
}

function hasAsciiLetter(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i) | 0x20; // folds A–Z onto a–z
    if (c >= 0x61 && c <= 0x7a) return true;
  }
  return false;
}

/** The code point at `i` of `text`, reading a surrogate pair as one (a caller steps 2 units past one above U+FFFF). */
function codePointAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
  }
  return c;
}

export interface Tokens {
  /**
   * Lower-cased runs of ASCII letters and digits longer than 2 characters that contain a letter, in
   * order. The seed says "split on whitespace, drop 2 characters or fewer"; splitting on every
   * non-alphanumeric character as well keeps "deploy," and "deploy" one word.
   */
  ascii: string[];
  /** Bigrams of adjacent Han/katakana characters, in order (a run of n such characters gives n − 1). */
  cjk: string[];
}

/** One pass over UTF-16 units (charCodeAt, no per-character strings): this is the engine's hot loop. */
export function tokenize(text: string): Tokens {
  const ascii: string[] = [];
  const cjk: string[] = [];
  let wordStart = -1;
  let prevStart = -1; // start of the previous bigram character, -1 when the previous character is not one
  const n = text.length;
  for (let i = 0; i < n;) {
    const c = text.charCodeAt(i);
    if (c < 0x80 && isAsciiAlnum(c)) {
      if (wordStart < 0) wordStart = i;
      prevStart = -1;
      i++;
      continue;
    }
    if (wordStart >= 0) {
      if (i - wordStart > 2 && hasAsciiLetter(text, wordStart, i)) ascii.push(text.slice(wordStart, i).toLowerCase());
      wordStart = -1;
    }
    const cp = codePointAt(text, i);
    const width = cp > 0xffff ? 2 : 1;
    if (isBigramChar(cp)) {
      if (prevStart >= 0) cjk.push(text.slice(prevStart, i + width));
      prevStart = i;
    } else prevStart = -1;
    i += width;
  }
  if (wordStart >= 0 && n - wordStart > 2 && hasAsciiLetter(text, wordStart, n)) ascii.push(text.slice(wordStart).toLowerCase());
  return { ascii, cjk };
}

const SURROGATE = /[\ud800-\udfff]/;

/** Unicode code points, not UTF-16 units: "你好" is 2 characters, as a reader counts them. */
export function charLength(text: string): number {
  if (!SURROGATE.test(text)) return text.length;
  let n = 0;
  for (let i = 0; i < text.length; i += codePointAt(text, i) > 0xffff ? 2 : 1) n++;
  return n;
}

export type Language = "zh" | "ja" | "en" | "unknown";

/** Share of CJK letters above which text is CJK (as the seed's engine decided "zh"). */
export const CJK_LANGUAGE_SHARE = 0.3;

/**
 * zh / ja / en / unknown, from the letters of the text: Latin letters (a–z), Han and kana; digits,
 * punctuation, whitespace and other scripts are not counted. More than 30% Han+kana is CJK: "ja" when
 * any kana appears (kana is Japanese only), "zh" otherwise; else "en". No counted letter: "unknown".
 */
export function detectLanguage(text: string): Language {
  let latin = 0;
  let han = 0;
  let kana = 0;
  for (let i = 0; i < text.length;) {
    const cp = codePointAt(text, i);
    i += cp > 0xffff ? 2 : 1;
    if (cp < 0x80) {
      const l = cp | 0x20;
      if (l >= 0x61 && l <= 0x7a) latin++;
    } else if (isHan(cp)) han++;
    else if (isHiragana(cp) || isKatakana(cp)) kana++;
  }
  const total = latin + han + kana;
  if (total === 0) return "unknown";
  if ((han + kana) / total > CJK_LANGUAGE_SHARE) return kana > 0 ? "ja" : "zh";
  return "en";
}

/**
 * Jaccard distance 1 − |A ∩ B| / |A ∪ B|; null when both sets are empty (nothing to compare, which is
 * not the same as "identical").
 */
export function jaccardDistance(a: ReadonlySet<string>, b: ReadonlySet<string>): number | null {
  if (a.size === 0 && b.size === 0) return null;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return 1 - inter / (a.size + b.size - inter);
}
