import type { FieldError } from "../lib/errors";
import { normalizeForScan } from "./normalize";

/**
 * The content-quality layer (seed 004, second screening layer): a proposal must say something a
 * council can weigh. Deterministic and cheap; the model prescreen judges substance later.
 * CJK text has no spaces, so "words" there are counted as characters / 2.
 */
export const QUALITY = {
  minTitleChars: 8,
  minBodyChars: 80,
  minBodyWords: 12,
  minDistinctWords: 8,
  /** A body whose single most frequent character is more than this share of it is filler. */
  maxSameCharShare: 0.3,
} as const;

const CJK_CLASS = String.raw`[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]`;
const HAS_CJK = new RegExp(CJK_CLASS, "u");
const CJK_CHARS = new RegExp(CJK_CLASS, "gu");

export function wordCount(text: string): { words: number; distinct: number } {
  const normalized = normalizeForScan(text);
  const ascii = normalized.match(/[\p{L}\p{N}]+/gu)?.filter((w) => !HAS_CJK.test(w)) ?? [];
  const cjk = normalized.match(CJK_CHARS) ?? [];
  const distinct = new Set([...ascii, ...cjk]).size;
  return { words: ascii.length + Math.floor(cjk.length / 2), distinct };
}

export function checkQuality(input: { title: string; body: string }): FieldError[] {
  const errors: FieldError[] = [];
  const title = input.title.trim();
  const body = input.body.trim();
  if ([...title].length < QUALITY.minTitleChars)
    errors.push({ path: "title", message: `must be at least ${QUALITY.minTitleChars} characters` });
  if ([...body].length < QUALITY.minBodyChars)
    errors.push({ path: "body", message: `must be at least ${QUALITY.minBodyChars} characters` });
  const { words, distinct } = wordCount(body);
  if (words < QUALITY.minBodyWords) errors.push({ path: "body", message: `must have at least ${QUALITY.minBodyWords} words` });
  if (distinct < QUALITY.minDistinctWords)
    errors.push({ path: "body", message: `must use at least ${QUALITY.minDistinctWords} different words` });
  const chars = [...body.replace(/\s/g, "")];
  if (chars.length > 0) {
    const freq = new Map<string, number>();
    for (const ch of chars) freq.set(ch, (freq.get(ch) ?? 0) + 1);
    if (Math.max(...freq.values()) / chars.length > QUALITY.maxSameCharShare) {
      errors.push({ path: "body", message: "is mostly one repeated character" });
    }
  }
  if (normalizeForScan(title) === normalizeForScan(body)) errors.push({ path: "body", message: "must say more than the title" });
  return errors;
}
