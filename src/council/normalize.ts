// Characters that render as nothing: zero-width space/joiners, word joiner, BOM, soft hyphen,
// Mongolian vowel separator. They are stripped so "ig\u200Bnore" reads as "ignore".
const INVISIBLE = /[\u00AD\u180E\u200B-\u200F\u2060-\u2064\uFEFF]/g;

/**
 * Text as the scanners see it: NFKC (full-width "ｉｇｎｏｒｅ" → "ignore", half-width katakana →
 * full-width), invisible characters removed, lower case, whitespace runs collapsed to one space.
 */
export function normalizeForScan(text: string): string {
  return text.normalize("NFKC").replace(INVISIBLE, "").toLowerCase().replace(/\s+/g, " ").trim();
}
