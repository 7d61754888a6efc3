import { COUNCIL_RULES, type CouncilRules } from "./rules";

export const VOTES = ["approve", "reject", "revise"] as const;
export type VoteChoice = (typeof VOTES)[number];
export type Outcome = "approved" | "rejected" | "revise";

export interface Ballot {
  node_id: string;
  vote: VoteChoice;
  weight: number;
  confidence: number;
}

export interface Tally {
  approve: number;
  reject: number;
  revise: number;
  total: number;
  votes: number;
}

export type TallyDecision =
  | { outcome: Outcome; confidence: number | null; approve_share: number; reject_share: number; tally: Tally }
  | { outcome: "abandoned"; reason: "no_votes"; tally: Tally };

// Weights are 1.0 and 0.5, so sums are exact in binary; the epsilon only absorbs other weights.
const EPSILON = 1e-9;

export function countBallots(ballots: readonly Ballot[]): Tally {
  const t: Tally = { approve: 0, reject: 0, revise: 0, total: 0, votes: ballots.length };
  for (const b of ballots) {
    t[b.vote] += b.weight;
    t.total += b.weight;
  }
  return t;
}

/**
 * The deterministic tally (API.md "Clarifications"): shares are over the total weight cast;
 * approve ≥ 0.6 → approved, else reject ≥ 0.5 → rejected, else revise; no votes → abandoned.
 * Confidence is the weight-averaged confidence of the ballots for the winning outcome, and
 * unknown (null) when nobody voted for it (a `revise` reached by neither side winning).
 */
export function decide(ballots: readonly Ballot[], rules: CouncilRules = COUNCIL_RULES): TallyDecision {
  const tally = countBallots(ballots);
  if (tally.total <= 0) return { outcome: "abandoned", reason: "no_votes", tally };
  const approveShare = tally.approve / tally.total;
  const rejectShare = tally.reject / tally.total;
  const outcome: Outcome =
    approveShare + EPSILON >= rules.approveShare ? "approved" : rejectShare + EPSILON >= rules.rejectShare ? "rejected" : "revise";
  const choice: VoteChoice = outcome === "approved" ? "approve" : outcome === "rejected" ? "reject" : "revise";
  const winners = ballots.filter((b) => b.vote === choice);
  const weight = winners.reduce((s, b) => s + b.weight, 0);
  const confidence = weight > 0 ? winners.reduce((s, b) => s + b.weight * b.confidence, 0) / weight : null;
  return { outcome, confidence, approve_share: approveShare, reject_share: rejectShare, tally };
}

/** Approved with confidence ≥ 0.7 crystallises into a governance principle. */
export function crystallises(outcome: string, confidence: number | null, rules: CouncilRules = COUNCIL_RULES): boolean {
  return outcome === "approved" && confidence !== null && confidence + EPSILON >= rules.principleMinConfidence;
}
