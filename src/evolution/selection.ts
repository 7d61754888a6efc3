import type { SelectedEntry } from "../conversations/playbook";
import type { PredictionError } from "../prediction";
import { isLive, netScore, SIGNAL_VOCABULARY, type PlaybookEntry, type SignalToken } from "./playbook";

/**
 * The injection channel (seed 003 §12.4 select.rs): entries whose `signals_match` hits the turn come
 * first, the remaining room goes to the best net scores, all within a token budget. Only `content`
 * reaches the prompt (as `SelectedEntry`, the shape `src/conversations/playbook.ts` injects);
 * applications, failure history and the rest are audit data and never leave the store this way.
 */

/** Default prompt budget for the playbook block, in estimated tokens. */
export const PLAYBOOK_TOKEN_BUDGET = 600;
/** Per-entry framing in the prompt (the bullet, the category tag, the newline), in estimated tokens. */
export const ENTRY_OVERHEAD_TOKENS = 4;

/**
 * A deliberately pessimistic token estimate with no tokenizer: ASCII characters at 4 per token, every
 * other code point (CJK, accented letters, emoji) a token of its own. Real tokenizers give English
 * about 4 characters a token and CJK about 1 to 1.5 characters a token, so this overestimates and the
 * block stays inside the budget it is given.
 */
export function estimateTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.codePointAt(0)! < 0x80) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4) + other;
}

/** What a turn says, for signal matching: vocabulary tokens it raised and its text. */
export interface TurnSignals {
  tokens: readonly string[];
  text: string;
}

/** Topic surprise and satisfaction levels at which the engine's error raises a signal token. */
export const TOPIC_SURPRISE_SIGNAL = 0.5;
export const LOW_SATISFACTION_SIGNAL = 0.5;

/** The vocabulary tokens a prediction error raises (the latest error of the conversation, when there is one). */
export function signalsFromError(
  e: Pick<PredictionError, "category" | "unexpected_correction" | "unexpected_follow_up" | "topic_surprise" | "inferred_satisfaction"> & {
    actual: Pick<PredictionError["actual"], "feedback_signal">;
  },
): SignalToken[] {
  const out: SignalToken[] = [];
  if (e.category === "significant") out.push("significant_error");
  if (e.category === "critical") out.push("critical_error");
  if (e.unexpected_correction) out.push("correction");
  if (e.unexpected_follow_up) out.push("follow_up");
  if (e.topic_surprise >= TOPIC_SURPRISE_SIGNAL) out.push("topic_surprise");
  if (e.inferred_satisfaction < LOW_SATISFACTION_SIGNAL) out.push("low_satisfaction");
  if (e.actual.feedback_signal !== null && e.actual.feedback_signal < 0) out.push("negative_feedback");
  return out;
}

const VOCAB = new Set<string>(SIGNAL_VOCABULARY);
const WORDISH = /^[a-z0-9_-]+$/;

/**
 * Whether one `signals_match` item hits the turn. A vocabulary token matches the turn's raised tokens
 * only. Anything else is a GEP keyword pattern `a|b|c`: an ASCII alternative matches as a whole word
 * of the lower-cased text ("api" does not match "rapid"), any other (CJK) as a substring.
 */
export function signalMatches(item: string, turn: TurnSignals, lowerText = turn.text.toLowerCase()): boolean {
  const s = item.trim().toLowerCase();
  if (VOCAB.has(s)) return turn.tokens.some((t) => t.toLowerCase() === s);
  for (const alt of s.split("|")) {
    const a = alt.trim();
    if (a === "") continue;
    if (WORDISH.test(a)) {
      if (new RegExp(`(?<![a-z0-9_])${a.replace(/-/g, "\\-")}(?![a-z0-9_])`).test(lowerText)) return true;
    } else if (lowerText.includes(a)) return true;
  }
  return false;
}

export interface SelectionOptions {
  budget_tokens?: number;
  /** Cap on entries regardless of budget (none by default). */
  max_entries?: number;
}

export interface RankedEntry {
  entry: PlaybookEntry;
  matched: boolean;
  net_score: number;
  tokens: number;
}

/**
 * Candidates in injection order: live entries (active and probation) whose signals hit first, then the
 * rest; within each group by net score (high first), then success streak (high first), then entry id.
 * Unmatched entries with a negative net score are not candidates: filling spare room with rules that
 * have hurt more than helped is worse than leaving it empty. Stale and retired entries never are.
 */
export function rankEntries(entries: readonly PlaybookEntry[], turn: TurnSignals): RankedEntry[] {
  const lower = turn.text.toLowerCase();
  const ranked = entries.filter(isLive).map((entry) => ({
    entry,
    matched: entry.signals_match.some((s) => signalMatches(s, turn, lower)),
    net_score: netScore(entry),
    tokens: estimateTokens(entry.content) + ENTRY_OVERHEAD_TOKENS,
  }));
  return ranked
    .filter((r) => r.matched || r.net_score >= 0)
    .sort(
      (a, b) =>
        Number(b.matched) - Number(a.matched) ||
        b.net_score - a.net_score ||
        b.entry.success_streak - a.entry.success_streak ||
        (a.entry.entry_id < b.entry.entry_id ? -1 : a.entry.entry_id > b.entry.entry_id ? 1 : 0),
    );
}

/**
 * The entries for one turn: walk the ranking and take each entry that still fits the budget (an entry
 * too big for the remaining room is skipped, a smaller later one may still fit).
 */
export function selectEntries(entries: readonly PlaybookEntry[], turn: TurnSignals, opts: SelectionOptions = {}): SelectedEntry[] {
  const budget = opts.budget_tokens ?? PLAYBOOK_TOKEN_BUDGET;
  const max = opts.max_entries ?? Infinity;
  const out: SelectedEntry[] = [];
  let used = 0;
  for (const r of rankEntries(entries, turn)) {
    if (out.length >= max) break;
    if (used + r.tokens > budget) continue;
    used += r.tokens;
    out.push({ entry_id: r.entry.entry_id, category: r.entry.category, content: r.entry.content });
  }
  return out;
}
