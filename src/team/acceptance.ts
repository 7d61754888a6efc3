import * as z from "zod";
import { canonicalJson } from "../jobs/canonical";
import { parseVerdict } from "../jobs/model-answer";
import { sha256Hex } from "../lib/crypto";

/**
 * The acceptance path (seed 002: "執行者が最後に出したものは、既存の受理経路に渡されます"): one path
 * for solo and team rounds. The round's last output is judged against each frozen criterion by an
 * evaluator; in a team round the verifier's verdict is its first stage. What stays unmet is
 * fingerprinted, so a loop that keeps failing on the same gaps is seen as oscillating, and the best
 * round so far is what a human gets when the loop stops. Pure: no I/O beyond WebCrypto hashing.
 */

/** A goal without criteria is judged on one implicit criterion: that it was done as titled. */
export function frozenCriteria(goal: { title: string; acceptance_criteria: readonly string[] }): { criteria: string[]; implicit: boolean } {
  if (goal.acceptance_criteria.length > 0) return { criteria: [...goal.acceptance_criteria], implicit: false };
  return { criteria: [`The task "${goal.title}" is done as asked.`], implicit: true };
}

/** The evaluator's answer: `{"criteria":[{"id":1,"met":true,"reason":"…"}]}` (ids are 1-based). */
export const acceptanceAnswer = z.strictObject({
  criteria: z
    .array(
      z.strictObject({
        id: z.number().int().min(1).max(1_000),
        met: z.boolean(),
        reason: z.string().max(4_000),
      }),
    )
    .min(1)
    .max(1_000),
});

export interface CriterionJudgement {
  id: number;
  met: boolean;
  reason: string;
  /** False when the evaluator said nothing about this criterion: then it is unmet (fail closed). */
  judged: boolean;
}

/** The verifier's part, for team rounds (absent for solo rounds). */
export interface VerifierStage {
  verdict: "PASS" | "FAIL";
  /** The verifier answered without a readable verdict (counted as FAIL). */
  unparseable: boolean;
  /** A repair pass ran after a FAIL: the evaluator then judges the repaired output. */
  repaired: boolean;
}

export interface Evaluation {
  /** `unparseable`: the evaluator's answer could not be read, so every criterion counts as unmet. */
  source: "evaluator" | "unparseable";
  /** Why an answer was unparseable (`not_json`, `schema_mismatch`, `empty_answer`). */
  unparseable_reason?: string;
  criteria: CriterionJudgement[];
  implicit_criterion: boolean;
  /** 1-based ids of the criteria still unmet. */
  unmet: number[];
  /**
   * The first stage in a team round: `rejected` is a verifier FAIL no repair pass followed (its
   * verdict on the output stands); `repaired` means the FAIL was repaired and the evaluator decides.
   */
  stage_one: "absent" | "passed" | "repaired" | "rejected";
  accepted: boolean;
  /** SHA-256 over what stayed unmet: two rounds with the same fingerprint failed in the same way. */
  fingerprint: string;
}

function stageOne(verifier: VerifierStage | undefined): Evaluation["stage_one"] {
  if (!verifier) return "absent";
  if (verifier.verdict === "PASS") return "passed";
  return verifier.repaired ? "repaired" : "rejected";
}

export async function gapFingerprint(unmet: readonly number[], stage: Evaluation["stage_one"]): Promise<string> {
  return sha256Hex(canonicalJson({ unmet: [...unmet].sort((a, b) => a - b), verifier_rejected: stage === "rejected" }));
}

/**
 * Judges a round from the evaluator's answer text. Strict JSON only; anything else is unparseable
 * and rejects every criterion (a judge reply that does not parse is a rejection, DESIGN principle 3).
 * A criterion the evaluator did not mention is unmet; an id outside the list is ignored.
 */
export async function evaluateRound(input: {
  criteria: readonly string[];
  implicit: boolean;
  answer: string | null;
  verifier?: VerifierStage;
}): Promise<Evaluation> {
  const parsed = parseVerdict(input.answer, acceptanceAnswer);
  const judged = new Map<number, { met: boolean; reason: string }>();
  if (parsed.ok) for (const c of parsed.value.criteria) if (!judged.has(c.id)) judged.set(c.id, { met: c.met, reason: c.reason });
  const criteria: CriterionJudgement[] = input.criteria.map((_, i) => {
    const j = judged.get(i + 1);
    return j ? { id: i + 1, met: j.met, reason: j.reason, judged: true } : { id: i + 1, met: false, reason: "not judged", judged: false };
  });
  const unmet = criteria.filter((c) => !c.met).map((c) => c.id);
  const stage = stageOne(input.verifier);
  return {
    source: parsed.ok ? "evaluator" : "unparseable",
    ...(parsed.ok ? {} : { unparseable_reason: parsed.reason }),
    criteria,
    implicit_criterion: input.implicit,
    unmet,
    stage_one: stage,
    accepted: unmet.length === 0 && stage !== "rejected",
    fingerprint: await gapFingerprint(unmet, stage),
  };
}

/** What the loop needs to know of a finished round. */
export interface JudgedRound {
  round_id: string;
  round_no: number;
  evaluation?: Evaluation;
  verdict?: "PASS" | "FAIL";
  repaired?: boolean;
  executors_completed: number;
}

export interface BestRound {
  round_id: string;
  round: number;
  /** Criteria met, of how many; absent when the round was never evaluated. */
  met?: number;
  of?: number;
  unmet?: number[];
  verdict?: "PASS" | "FAIL";
}

/**
 * The best round so far (seed 002: "これまでに得た最良のラウンド"): more criteria met beats fewer, then
 * a verifier PASS beats a FAIL, a repaired round an unrepaired one, more completed executors fewer,
 * and a later round an earlier one. A round never evaluated ranks below every evaluated one.
 */
export function bestRound(rounds: readonly JudgedRound[]): BestRound | undefined {
  const score = (r: JudgedRound) => [
    r.evaluation ? r.evaluation.criteria.filter((c) => c.met).length : -1,
    r.verdict === "PASS" ? 2 : r.verdict === "FAIL" ? 1 : 0,
    r.repaired ? 1 : 0,
    r.executors_completed,
    r.round_no,
  ];
  const best = [...rounds].sort((a, b) => {
    const [sa, sb] = [score(a), score(b)];
    for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return sb[i]! - sa[i]!;
    return 0;
  })[0];
  if (!best) return undefined;
  const e = best.evaluation;
  return {
    round_id: best.round_id,
    round: best.round_no,
    ...(e ? { met: e.criteria.filter((c) => c.met).length, of: e.criteria.length, unmet: e.unmet } : {}),
    ...(best.verdict ? { verdict: best.verdict } : {}),
  };
}

export type LoopDecision =
  | { kind: "next" }
  | { kind: "stop"; reason: "gap_oscillation"; pause_class: "no_progress"; repeats_round: number }
  | { kind: "stop"; reason: "rounds_exhausted"; pause_class: "budget_exhausted" };

/**
 * After a rejected round: stop when its gap fingerprint repeats an earlier round's (the loop is
 * oscillating: another round would fail the same way), or when the task's rounds are spent;
 * otherwise work another round.
 */
export function decideAfterRejection(rounds: readonly JudgedRound[], roundsBudget: number): LoopDecision {
  const last = rounds[rounds.length - 1];
  const fp = last?.evaluation?.fingerprint;
  if (fp) {
    const earlier = rounds.slice(0, -1).find((r) => r.evaluation?.fingerprint === fp);
    if (earlier) return { kind: "stop", reason: "gap_oscillation", pause_class: "no_progress", repeats_round: earlier.round_no };
  }
  if (rounds.length >= roundsBudget) return { kind: "stop", reason: "rounds_exhausted", pause_class: "budget_exhausted" };
  return { kind: "next" };
}
