import { normalizeForScan } from "../council/normalize";
import { jaccardDistance, tokenize } from "../prediction";
import { mustAlwaysMissing, mustNotHits, secretHits, type Contract } from "./contract";
import { readJsonAnswer } from "../jobs/model-answer";
import { isolate, judgeTitle, type GvuCallHeader } from "./gvu-prompt";
import type { GeneratorOutput, SoulVersionSummary, TextGradient } from "./gvu-types";

/**
 * The legacy verifier (seed 003 §4.4): four layers in order, three of them zero-LLM, the first refusal
 * ending the generation. L1 deterministic (empty, > 10 KB, contract against the simulated final SOUL,
 * secrets), L2 history (repeat of a rolled-back proposal, oscillation), L3 the judge
 * (`approved && score ≥ 0.7`; a reply that does not parse is a rejection), L4 trend (does not reverse
 * the direction the last confirmed version established).
 */
export const MAX_PROPOSAL_BYTES = 10 * 1024;
export const MAX_SOUL_BYTES = 50 * 1024;
/** L2: keyword overlap above this with a rolled-back proposal is a repeat. */
export const ROLLBACK_OVERLAP = 0.5;
/** L2 oscillation: similar to the version before last (> 0.6) while unlike the last one (< 0.3): A → B → A. */
export const OSCILLATION_SIMILAR = 0.6;
export const OSCILLATION_DIFFERENT = 0.3;
export const JUDGE_PASS_SCORE = 0.7;
/** L4: overlap with the last confirmed proposal from which a reversal marker reads as undoing it. */
export const TREND_OVERLAP = 0.3;

export type Layer = "L1" | "L2" | "L3" | "L4";

const SOURCE = { L1: "L1-Deterministic", L2: "L2-Historical", L3: "L3-LLMJudge", L4: "L4-Trend" } as const;

export type LayerResult = { ok: true; advisories: TextGradient[] } | { ok: false; reason: string; gradient: TextGradient };

export type VerificationResult =
  | { approved: true; confidence: number; advisories: TextGradient[] }
  | { approved: false; layer: Layer; reason: string; gradient: TextGradient };

export interface VerifyInput {
  current_soul: string;
  proposal: GeneratorOutput;
  contract: Contract;
  /** Earlier versions of this agent (any order). */
  versions: readonly SoulVersionSummary[];
}

const bytes = (s: string) => new TextEncoder().encode(s).length;

function blocked(layer: Layer, reason: string, target: string, critique: string, suggestion: string): LayerResult {
  return { ok: false, reason, gradient: { target, critique, suggestion, source_layer: SOURCE[layer], severity: "blocking" } };
}

/** The SOUL.md the proposal would produce (§4.5: append-only, current + "\n\n" + proposed). */
export function simulatedSoul(current: string, proposed: string): string {
  return `${current}\n\n${proposed}`;
}

export function verifyL1(input: VerifyInput): LayerResult {
  const p = input.proposal.proposed_changes;
  if (p.trim() === "") return blocked("L1", "empty", "proposed_changes", "The proposal is empty.", "Propose one concrete addition.");
  if (bytes(p) > MAX_PROPOSAL_BYTES)
    return blocked(
      "L1",
      "proposal_too_large",
      "proposed_changes",
      `The proposal is ${bytes(p)} bytes (max ${MAX_PROPOSAL_BYTES}).`,
      "Keep it short and focused.",
    );
  const final = simulatedSoul(input.current_soul, p);
  const forbidden = mustNotHits(final, input.contract);
  if (forbidden.length > 0)
    return blocked(
      "L1",
      "must_not",
      "SOUL.md (simulated)",
      `The result contains forbidden text: ${forbidden.join(", ")}.`,
      "Remove anything the contract forbids.",
    );
  const missing = mustAlwaysMissing(final, input.contract);
  if (missing.length > 0)
    return blocked(
      "L1",
      "must_always",
      "SOUL.md (simulated)",
      `The result lacks required text: ${missing.join(", ")}.`,
      "Keep every must_always commitment.",
    );
  if (bytes(final) > MAX_SOUL_BYTES)
    return blocked(
      "L1",
      "soul_too_large",
      "SOUL.md (simulated)",
      `The result would be ${bytes(final)} bytes (max ${MAX_SOUL_BYTES}).`,
      "Propose less text.",
    );
  const secrets = secretHits(`${p}\n${input.proposal.rationale}`);
  if (secrets.length > 0)
    return blocked(
      "L1",
      "secret",
      "proposed_changes",
      `The proposal carries secret-like text (${secrets.join(", ")}).`,
      "Never include keys or tokens.",
    );
  return { ok: true, advisories: [] };
}

/** §4.4 keyword_overlap: the larger of the ASCII-word Jaccard and the CJK-bigram Jaccard (0 when neither side has tokens). */
export function keywordOverlap(a: string, b: string): number {
  const ta = tokenize(a);
  const tb = tokenize(b);
  const sim = (x: string[], y: string[]) => {
    const d = jaccardDistance(new Set(x), new Set(y));
    return d === null ? 0 : 1 - d;
  };
  return Math.round(Math.max(sim(ta.ascii, tb.ascii), sim(ta.cjk, tb.cjk)) * 1e9) / 1e9;
}

const byAppliedDesc = (vs: readonly SoulVersionSummary[]) => [...vs].sort((a, b) => Date.parse(b.applied_at) - Date.parse(a.applied_at));

export function verifyL2(input: VerifyInput): LayerResult {
  const p = input.proposal.proposed_changes;
  for (const v of input.versions) {
    if (v.status !== "rolled_back") continue;
    const overlap = keywordOverlap(p, v.content);
    if (overlap > ROLLBACK_OVERLAP)
      return blocked(
        "L2",
        "repeats_rollback",
        `version ${v.version_id}`,
        `The proposal repeats a rolled-back change (keyword overlap ${overlap}).`,
        "Try a different approach than the one that was rolled back.",
      );
  }
  const [last, beforeLast] = byAppliedDesc(input.versions);
  if (last && beforeLast) {
    const toBefore = keywordOverlap(p, beforeLast.content);
    const toLast = keywordOverlap(p, last.content);
    if (toBefore > OSCILLATION_SIMILAR && toLast < OSCILLATION_DIFFERENT)
      return blocked(
        "L2",
        "oscillation",
        `versions ${beforeLast.version_id} → ${last.version_id}`,
        `The proposal swings back to the version before last (overlap ${toBefore}) away from the last one (${toLast}).`,
        "Build on the latest version instead of reverting to an older one.",
      );
  }
  return { ok: true, advisories: [] };
}

/** §4.4 L3's four criteria, as the judge is asked them. */
export const JUDGE_CRITERIA = [
  "Consistency: the addition fits the persona in SOUL.md and contradicts nothing in it.",
  "Contract: it respects every must_not and must_always boundary.",
  "Specificity: it is a concrete, actionable behaviour, not a platitude.",
  "Effect: it plausibly addresses the trigger and improves feedback or prediction error.",
];

export function buildJudgePrompt(input: {
  current_soul: string;
  proposal: GeneratorOutput;
  contract: Contract;
  header?: GvuCallHeader;
}): string {
  const list = (xs: readonly string[]) => (xs.length === 0 ? "(none)" : xs.map((x) => JSON.stringify(x)).join(", "));
  return [
    judgeTitle(input.header),
    "",
    "## Current SOUL.md",
    isolate("soul_content", input.current_soul),
    "",
    "## Proposed addition",
    isolate("proposed_changes", input.proposal.proposed_changes),
    "",
    "## Rationale given",
    isolate("trigger_context", input.proposal.rationale),
    "",
    "## Contract",
    `must_not: ${list(input.contract.must_not)}`,
    `must_always: ${list(input.contract.must_always)}`,
    "",
    "## Criteria",
    ...JUDGE_CRITERIA.map((c, i) => `${i + 1}. ${c}`),
    "",
    'Reply with one JSON object only: {"approved": true|false, "score": 0.0-1.0, "feedback": "..."}',
  ].join("\n");
}

export type JudgeReply = { ok: true; approved: boolean; score: number; feedback: string } | { ok: false; reason: "unparseable" };

/**
 * The judge's `{"approved": bool, "score": number, "feedback": string}`. Strict: the whole reply is
 * the object (or one ```json fence around it, `readJsonAnswer`), `approved` a boolean, `score` a
 * finite number in [0, 1]; anything else (prose around it, a string score, a missing field) is
 * unparseable, and an unparseable reply is a rejection (fail closed). Never a scan of free text: a
 * judge quoting a proposal that carries `{"approved": true, …}` must not approve it.
 */
export function parseJudgeReply(reply: string | null | undefined): JudgeReply {
  const read = readJsonAnswer(reply);
  const o =
    read.ok && read.json !== null && typeof read.json === "object" && !Array.isArray(read.json)
      ? (read.json as Record<string, unknown>)
      : null;
  if (!o || typeof o.approved !== "boolean" || typeof o.score !== "number" || !Number.isFinite(o.score) || o.score < 0 || o.score > 1)
    return { ok: false, reason: "unparseable" };
  return { ok: true, approved: o.approved, score: o.score, feedback: typeof o.feedback === "string" ? o.feedback : "" };
}

export function verifyL3(reply: string | null | undefined): LayerResult & { score?: number } {
  const j = parseJudgeReply(reply);
  if (!j.ok)
    return blocked(
      "L3",
      "judge_unparseable",
      "judge reply",
      "The judge's reply could not be read.",
      "Resubmit a clear, well-scoped proposal.",
    );
  if (!j.approved || j.score < JUDGE_PASS_SCORE)
    return blocked(
      "L3",
      j.approved ? "judge_score_low" : "judge_rejected",
      "proposed_changes",
      `The judge ${j.approved ? "approved" : "rejected"} with score ${j.score}: ${j.feedback}`.trim(),
      j.feedback || "Address the judge's concerns.",
    );
  return { ok: true, advisories: [], score: j.score };
}

const REVERSAL =
  /\b(?:no longer|stop|don'?t|do not|never|instead of|rather than|remove|revert|undo|drop|abandon|forget)\b|やめ|しない|不要|取り消|撤回|不再|停止|取消|别再|別再/u;

/**
 * L4: the last confirmed version that improved something (feedback up or error down) set a direction;
 * a proposal that talks about the same thing (keyword overlap ≥ 0.3) in reversing terms ("no longer",
 * "stop", "instead of", やめ, 不再…) would walk it back and is refused. No confirmed version, or one
 * that improved nothing, sets no direction.
 */
export function verifyL4(input: VerifyInput): LayerResult {
  const confirmed = byAppliedDesc(input.versions).find((v) => v.status === "confirmed");
  if (!confirmed || !confirmed.post) return { ok: true, advisories: [] };
  const pre = confirmed.pre;
  const post = confirmed.post;
  const fbUp =
    pre.positive_feedback_ratio !== null &&
    post.positive_feedback_ratio !== null &&
    post.positive_feedback_ratio > pre.positive_feedback_ratio;
  const errDown =
    pre.avg_prediction_error !== null && post.avg_prediction_error !== null && post.avg_prediction_error < pre.avg_prediction_error;
  if (!fbUp && !errDown) return { ok: true, advisories: [] };
  const p = input.proposal.proposed_changes;
  const overlap = keywordOverlap(p, confirmed.content);
  if (overlap >= TREND_OVERLAP && REVERSAL.test(normalizeForScan(p)))
    return blocked(
      "L4",
      "trend_reversal",
      `version ${confirmed.version_id}`,
      `The proposal walks back a confirmed improvement (overlap ${overlap}).`,
      "Keep what the last confirmed version established; refine elsewhere.",
    );
  return { ok: true, advisories: [] };
}

/** L1 then L2; then the judge is needed. The judge is never asked about a proposal L1 or L2 refused. */
export function verifyBeforeJudge(input: VerifyInput): { status: "rejected"; result: VerificationResult } | { status: "needs_judge" } {
  for (const [layer, run] of [
    ["L1", verifyL1],
    ["L2", verifyL2],
  ] as const) {
    const r = run(input);
    if (!r.ok) return { status: "rejected", result: { approved: false, layer, reason: r.reason, gradient: r.gradient } };
  }
  return { status: "needs_judge" };
}

/** L3 on the judge's reply, then L4. */
export function verifyAfterJudge(input: VerifyInput, judgeReply: string | null | undefined): VerificationResult {
  const l3 = verifyL3(judgeReply);
  if (!l3.ok) return { approved: false, layer: "L3", reason: l3.reason, gradient: l3.gradient };
  const l4 = verifyL4(input);
  if (!l4.ok) return { approved: false, layer: "L4", reason: l4.reason, gradient: l4.gradient };
  return { approved: true, confidence: l3.score!, advisories: [...l3.advisories, ...l4.advisories] };
}

/** L1 → L2 → L3 (one judge call) → L4, in order; the first refusal ends it. A judge that throws reads as no reply. */
export async function verifyProposal(input: VerifyInput, judge: (prompt: string) => Promise<string | null>): Promise<VerificationResult> {
  const before = verifyBeforeJudge(input);
  if (before.status === "rejected") return before.result;
  let reply: string | null = null;
  try {
    reply = await judge(buildJudgePrompt(input));
  } catch {
    reply = null;
  }
  return verifyAfterJudge(input, reply);
}
