import { tokenize } from "../prediction";
import { runGate, type GateContext, type GateRefusal, type GatePass } from "./aee-gate";
import { mustNotHits, type Contract } from "./contract";
import { contentSimilarity } from "./dedup";
import { isLive, type Playbook, type PlaybookEntry } from "./playbook";
import { sycophancyHits } from "./reward-hack";

/**
 * Measure (seed 003 §12.5.2 verifier_measure.rs): quality as a score vector, never a veto. cases (the
 * eval cases' pass rate), judge (the old L3, demoted to one score; a failed call records null, never
 * 0.0), anti_sycophancy (H4, telemetry only), novelty (the old L2 similarity veto turned into a score)
 * and relevance (the old L2.5 mistake relevance). The one thing that zeroes the whole vector is a
 * case's actual reply stepping on a `must_not` after the Gate passed (MeasureVector::zeroed).
 */
export type CaseVerdict = "PASS" | "FAIL" | "unscored";

/** One eval case's result on a playbook (the shadow or the champion), as the runner's replay reports it. */
export interface CaseResult {
  case_ref: string;
  verdict: CaseVerdict;
  /** The reply the case produced, when reported (checked against must_not). */
  response?: string;
}

export interface CaseScores {
  /** passed / (passed + failed); null when no case was scored (unknown, not zero). */
  pass_rate: number | null;
  passed: number;
  failed: number;
  unscored: number;
  per_case: Record<string, CaseVerdict>;
}

export type JudgeStatus = "scored" | "not_run" | "failed" | "invalid";

export interface MeasureVector {
  cases: CaseScores;
  judge: number | null;
  judge_status: JudgeStatus;
  /** H4 telemetry: the phrases courting a judge found in the candidate's texts (never a refusal). */
  anti_sycophancy: { hits: string[] };
  /** 1 − the highest content similarity of a candidate text to an existing live entry; null without candidate text. */
  novelty: number | null;
  /** Share of the candidate's keywords found in the round's mistake/trigger context; null without either. */
  relevance: number | null;
  /** Set when a case reply stepped on must_not: every score is then 0. */
  zeroed: { reason: "must_not_in_response"; case_ref: string; phrases: string[] } | null;
}

const r9 = (x: number) => Math.round(x * 1e9) / 1e9;

export function caseScores(results: readonly CaseResult[]): CaseScores {
  const per_case: Record<string, CaseVerdict> = {};
  let passed = 0;
  let failed = 0;
  let unscored = 0;
  for (const r of results) {
    per_case[r.case_ref] = r.verdict;
    if (r.verdict === "PASS") passed++;
    else if (r.verdict === "FAIL") failed++;
    else unscored++;
  }
  const scored = passed + failed;
  return { pass_rate: scored === 0 ? null : r9(passed / scored), passed, failed, unscored, per_case };
}

function keywordSet(text: string): Set<string> {
  const t = tokenize(text.normalize("NFKC"));
  return new Set([...t.ascii, ...t.cjk]);
}

export function relevanceOf(candidateTexts: readonly string[], context: string | undefined): number | null {
  if (context === undefined || context.trim() === "") return null;
  const mine = keywordSet(candidateTexts.join("\n"));
  if (mine.size === 0) return null;
  const ctx = keywordSet(context);
  let shared = 0;
  for (const k of mine) if (ctx.has(k)) shared++;
  return r9(shared / mine.size);
}

export function noveltyOf(candidateTexts: readonly string[], existing: readonly Pick<PlaybookEntry, "content">[]): number | null {
  if (candidateTexts.length === 0) return null;
  let maxSim = 0;
  for (const c of candidateTexts) for (const e of existing) maxSim = Math.max(maxSim, contentSimilarity(c, e.content));
  return r9(1 - maxSim);
}

export interface MeasureInput {
  case_results: readonly CaseResult[];
  contract: Pick<Contract, "must_not">;
  /** The candidate's new or changed contents (empty for the champion). */
  candidate_texts: readonly string[];
  /** Live entries other than the candidate's own, for novelty. */
  existing: readonly Pick<PlaybookEntry, "content">[];
  /** The round's mistake notes / trigger context, for relevance. */
  context?: string;
}

export interface MeasureDeps {
  /** One judge call (a runner job); resolves to a score in [0, 1], or null / a rejection when it failed. */
  judge?: () => Promise<number | null>;
}

export async function measure(input: MeasureInput, deps: MeasureDeps = {}): Promise<MeasureVector> {
  const cases = caseScores(input.case_results);
  const h4 = [...new Set(input.candidate_texts.flatMap(sycophancyHits))].sort();
  for (const r of input.case_results) {
    if (r.response === undefined) continue;
    const phrases = mustNotHits(r.response, input.contract);
    if (phrases.length > 0) {
      // Zeroed: no judge call is worth buying for a vector that is 0 whatever it says.
      return {
        cases: { ...cases, pass_rate: 0 },
        judge: 0,
        judge_status: "not_run",
        anti_sycophancy: { hits: h4 },
        novelty: 0,
        relevance: 0,
        zeroed: { reason: "must_not_in_response", case_ref: r.case_ref, phrases },
      };
    }
  }
  let judge: number | null = null;
  let judge_status: JudgeStatus = "not_run";
  if (deps.judge) {
    try {
      const s = await deps.judge();
      if (s === null) judge_status = "failed";
      else if (typeof s !== "number" || !Number.isFinite(s) || s < 0 || s > 1) judge_status = "invalid";
      else {
        judge = s;
        judge_status = "scored";
      }
    } catch {
      judge_status = "failed";
    }
  }
  return {
    cases,
    judge,
    judge_status,
    anti_sycophancy: { hits: h4 },
    novelty: noveltyOf(input.candidate_texts, input.existing),
    relevance: relevanceOf(input.candidate_texts, input.context),
    zeroed: null,
  };
}

export interface EvaluateDeps extends MeasureDeps {
  /** Runs the eval cases against the shadow playbook (a runner job in production). */
  runCases: (shadow: Playbook, gate: GatePass) => Promise<CaseResult[]>;
}

export type Evaluation = { stage: "gate"; gate: GateRefusal } | { stage: "measured"; gate: GatePass; measure: MeasureVector };

/**
 * Gate first, then Measure (decision B2): a candidate the Gate refuses never reaches the cases or the
 * judge; neither callback is called for it.
 */
export async function evaluateCandidate(
  rawDelta: unknown,
  gateCtx: GateContext,
  deps: EvaluateDeps,
  extra: { context?: string } = {},
): Promise<Evaluation> {
  const gate = runGate(rawDelta, gateCtx);
  if (!gate.pass) return { stage: "gate", gate };
  const caseResults = await deps.runCases(gate.shadow, gate);
  const changedIds = new Set(gate.changes.map((c) => c.entry_id));
  const vector = await measure(
    {
      case_results: caseResults,
      contract: gateCtx.contract,
      candidate_texts: gate.changes.filter((c) => c.op !== "retire").map((c) => c.after.content),
      existing: gateCtx.playbook.entries.filter((e) => isLive(e) && !changedIds.has(e.entry_id)),
      ...(extra.context !== undefined ? { context: extra.context } : {}),
    },
    deps,
  );
  return { stage: "measured", gate, measure: vector };
}
