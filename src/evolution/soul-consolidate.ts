import { sha256HexSync } from "../council/sha256";
import { readJsonAnswer } from "../jobs/model-answer";
import { tokenize } from "../prediction";
import { mustAlwaysMissing, mustNotHits, secretHits, type Contract } from "./contract";
import { isolate } from "./gvu-prompt";
import { MAX_PROPOSAL_BYTES } from "./gvu-verify";
import { MAX_SOUL_BYTES } from "./soul-store";

/**
 * SOUL consolidation (seed 003 v3 "capデッドロック解除", §12 "capを超えたSOUL.mdの全文圧縮は第4章の
 * WP0.2 consolidate経路を通り"), as pure steps. The legacy updater only appends (§4.5, against
 * truncation attacks) and refuses a result over 50 KB, so a SOUL at its cap could never change again:
 * every proposal failed L1 `soul_too_large` (R2, the one-way valve). Consolidation is the one full-text
 * rewrite the engine makes: a model compresses the whole SOUL, and the result is applied only when it
 * leaves room for a full-size proposal, keeps the contract, every heading and most of the vocabulary.
 */

/** A consolidated SOUL must leave room for one full-size GVU append (current + "\n\n" + 10 KB). */
export const CONSOLIDATE_TARGET_BYTES = MAX_SOUL_BYTES - MAX_PROPOSAL_BYTES - 2;
/** Share of the original's distinct keywords (ASCII words, CJK bigrams) the result must keep. */
export const CONSOLIDATE_MIN_KEYWORD_RECALL = 0.5;

export type ConsolidationNeed = "over_cap" | "append_refused";

/** A legacy round that ended on the SOUL's current version, as the need reads it. */
export interface EndedRound {
  status: string;
  generations: readonly Record<string, unknown>[];
  outcome: Record<string, unknown> | null;
}

/**
 * The round met the cap: a generation refused as `soul_too_large`, or a prompt the SOUL made too
 * large (`cause: other_inputs` is a prompt too large for reasons a consolidation would not fix).
 */
export function hitTheCap(round: EndedRound): boolean {
  return (
    round.generations.some((g) => g.reason === "soul_too_large") ||
    (round.outcome?.reason === "prompt_too_large" && round.outcome.cause !== "other_inputs")
  );
}

/** The round's emergency was lost to the cap: it hit the cap, or was skipped waiting for the consolidation. */
export function lostToCap(round: EndedRound): boolean {
  return hitTheCap(round) || round.outcome?.reason === "soul_at_cap";
}

/**
 * Why a GVU prompt did not fit a job (64 KiB of JSON): `soul` when the SOUL is past the
 * consolidation target and the same prompt with the SOUL at the target would fit (the consolidation
 * the `gvu` tick then starts fixes it), else `other_inputs` (the trigger context, contract, history
 * or feedback make it too large: consolidating would not help, the operator has to shorten them).
 * Sizes in bytes of the prompt's JSON encoding, as the job limit counts them.
 */
export function promptTooLarge(input: {
  prompt_bytes: number;
  /** The SOUL in UTF-8 (what the target counts) and inside the prompt's JSON (escapes included). */
  soul_bytes: number;
  soul_json_bytes?: number;
  limit: number;
  target_bytes?: number;
}) {
  const target = input.target_bytes ?? CONSOLIDATE_TARGET_BYTES;
  const inJson = input.soul_json_bytes ?? input.soul_bytes;
  // The SOUL shrunk to the target takes its share of the JSON at the same escape ratio.
  const atTarget = input.soul_bytes > 0 ? Math.ceil((target * inJson) / input.soul_bytes) : 0;
  const withTarget = input.prompt_bytes - inJson + Math.min(inJson, atTarget);
  const cause = input.soul_bytes > target && withTarget <= input.limit ? ("soul" as const) : ("other_inputs" as const);
  return {
    reason: "prompt_too_large" as const,
    cause,
    prompt_bytes: input.prompt_bytes,
    soul_bytes: input.soul_bytes,
    limit_bytes: input.limit,
    detail:
      cause === "soul"
        ? `the prompt is ${input.prompt_bytes} bytes (max ${input.limit}) because the SOUL (${input.soul_bytes} bytes) is past the consolidation target (${target}): the gvu tick consolidates it and then retries this request`
        : `the prompt is ${input.prompt_bytes} bytes (max ${input.limit}) with the SOUL at ${input.soul_bytes} bytes: the trigger context, contract, history or feedback make it too large, and consolidating the SOUL would not fix that; shorten the contract or the trigger context`,
  };
}

/**
 * Whether the SOUL needs consolidating: over its cap (any path, seed §12: AEE never writes the SOUL,
 * but an over-cap one is still compressed), or, where the updater appends (the legacy path), too full
 * for a full-size proposal and a round on this very version already hit the cap. A SOUL with room for
 * a full-size append never needs it: any proposal L1 lets through by size fits.
 */
export function consolidationNeed(input: {
  soul_bytes: number;
  appends: boolean;
  rounds_on_version: readonly EndedRound[];
}): ConsolidationNeed | null {
  if (input.soul_bytes > MAX_SOUL_BYTES) return "over_cap";
  if (!input.appends || input.soul_bytes <= CONSOLIDATE_TARGET_BYTES) return null;
  return input.rounds_on_version.some(hitTheCap) ? "append_refused" : null;
}

const oneLine = (s: string) => s.replace(/[\r\n\u2028\u2029]+/g, " ").slice(0, 100);

/** `# SOUL.md consolidation for <name> — version <n>`: the first line names the work (the runner's logs, tests). */
export function consolidationTitle(employee: string, version: number): string {
  return `# SOUL.md consolidation for ${oneLine(employee)} — version ${version}`;
}

/** Markdown headings (`#`…`######`), trimmed, in order: the structure a consolidation keeps. */
export function headingsOf(text: string): string[] {
  return [...text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gmu)].map((m) => m[1]!.trim());
}

export function buildConsolidationPrompt(input: {
  employee: string;
  version: number;
  soul: string;
  contract: Contract;
  target_bytes?: number;
}): string {
  const target = input.target_bytes ?? CONSOLIDATE_TARGET_BYTES;
  const headings = headingsOf(input.soul);
  const list = (xs: readonly string[]) => (xs.length === 0 ? "(none)" : xs.map((x) => JSON.stringify(x)).join(", "));
  return [
    consolidationTitle(input.employee, input.version),
    "",
    `This agent's SOUL.md (its persona) is ${new TextEncoder().encode(input.soul).length} bytes, too large to grow: new rules can no longer be appended.`,
    `Rewrite the whole SOUL.md so it is at most ${target} bytes of UTF-8 while keeping its meaning: every rule, commitment and trait must survive.`,
    "Merge duplicates and near-duplicates, drop repetition and filler, prefer short concrete sentences. Do not add new rules, do not change who the agent is.",
    "",
    "## Current SOUL.md",
    isolate("soul_content", input.soul),
    "",
    "## Must keep",
    `Every heading, verbatim: ${list(headings)}`,
    `must_always (keep this text): ${list(input.contract.must_always)}`,
    `must_not (never include): ${list(input.contract.must_not)}`,
    "",
    'Reply with one JSON object only: {"consolidated_soul": "<the full new SOUL.md>", "summary": "<what you merged or removed>"}',
  ].join("\n");
}

export type ConsolidationRefusal =
  | "unparseable"
  | "empty"
  | "too_large"
  | "not_smaller"
  | "unsafe_characters"
  | "must_not"
  | "must_always"
  | "secret"
  | "headings_missing"
  | "meaning_lost";

export type ConsolidationCheck =
  | { ok: true; soul: string; sha256: string; bytes: number; summary: string; keyword_recall: number }
  | { ok: false; reason: ConsolidationRefusal; detail: string };

// C0 controls other than tab/newline/CR, and bidi overrides: the same text an operator's SOUL may not carry (soul-api.ts).
const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u202A-\u202E\u2066-\u2069]/u;

const bytes = (s: string) => new TextEncoder().encode(s).length;

/** Distinct keywords (ASCII words of 3+ characters, CJK bigrams): what "keeps its meaning" is measured on. */
function keywords(text: string): Set<string> {
  const t = tokenize(text);
  return new Set([...t.ascii, ...t.cjk]);
}

/** The share of `original`'s keywords still in `result` (1 when the original has none). */
export function keywordRecall(original: string, result: string): number {
  const before = keywords(original);
  if (before.size === 0) return 1;
  const after = keywords(result);
  let kept = 0;
  for (const k of before) if (after.has(k)) kept++;
  return Math.round((kept / before.size) * 1e6) / 1e6;
}

/**
 * The model's reply, checked fail-closed before anything is written (the first failing check names
 * the refusal): one JSON object with a non-empty `consolidated_soul`; at most the target (room for a
 * full-size append) and smaller than the original; no control or bidi characters; the contract
 * (`must_not`, `must_always`) on the full text; no secret-like text the original did not already
 * have; every heading of the original; at least half of its keywords.
 */
export function checkConsolidation(input: {
  original: string;
  reply: string | null;
  contract: Contract;
  target_bytes?: number;
}): ConsolidationCheck {
  const target = input.target_bytes ?? CONSOLIDATE_TARGET_BYTES;
  const read = readJsonAnswer(input.reply);
  const o =
    read.ok && read.json !== null && typeof read.json === "object" && !Array.isArray(read.json)
      ? (read.json as Record<string, unknown>)
      : null;
  if (!o || typeof o.consolidated_soul !== "string")
    return { ok: false, reason: "unparseable", detail: "the reply is not a JSON object with a consolidated_soul string" };
  const soul = o.consolidated_soul;
  const summary = typeof o.summary === "string" ? o.summary.slice(0, 500) : "";
  if (soul.trim() === "") return { ok: false, reason: "empty", detail: "the consolidated SOUL is blank" };
  const size = bytes(soul);
  if (size > target) return { ok: false, reason: "too_large", detail: `${size} bytes (max ${target})` };
  if (size >= bytes(input.original)) return { ok: false, reason: "not_smaller", detail: `${size} bytes, not less than the original` };
  if (!soul.isWellFormed() || UNSAFE.test(soul))
    return { ok: false, reason: "unsafe_characters", detail: "control, bidi override or lone surrogate characters" };
  const forbidden = mustNotHits(soul, input.contract);
  if (forbidden.length > 0) return { ok: false, reason: "must_not", detail: forbidden.join(", ") };
  const missing = mustAlwaysMissing(soul, input.contract);
  if (missing.length > 0) return { ok: false, reason: "must_always", detail: missing.join(", ") };
  const had = new Set(secretHits(input.original));
  const secrets = secretHits(soul).filter((s) => !had.has(s));
  if (secrets.length > 0) return { ok: false, reason: "secret", detail: secrets.join(", ") };
  const kept = new Set(headingsOf(soul).map((h) => h.toLowerCase()));
  const lost = headingsOf(input.original).filter((h) => !kept.has(h.toLowerCase()));
  if (lost.length > 0) return { ok: false, reason: "headings_missing", detail: lost.slice(0, 10).join(", ") };
  const recall = keywordRecall(input.original, soul);
  if (recall < CONSOLIDATE_MIN_KEYWORD_RECALL)
    return {
      ok: false,
      reason: "meaning_lost",
      detail: `keeps ${recall} of the original's keywords (min ${CONSOLIDATE_MIN_KEYWORD_RECALL})`,
    };
  return { ok: true, soul, sha256: sha256HexSync(soul), bytes: size, summary, keyword_recall: recall };
}
