/**
 * Stagnation detection (seed 003 §12.5 stagnation.rs, AVO): an agent whose recent rounds stopped
 * producing improvements is stuck, and says so (the dashboard's stagnation card; the next intent
 * leans to innovation, see aee-intent.ts). Over the last 5 rounds that ran (skips are not evidence
 * of anything, and are not counted): no round committed an improvement. A window not yet full is
 * `insufficient_rounds`, not "fine" and not "stagnant".
 */
export const STAGNATION_WINDOW = 5;

export interface RoundSummary {
  round_seq: number;
  outcome: "committed" | "abandoned" | "skipped";
  /** For a committed round: the commit gate's verdict. */
  verdict?: "improves" | "matches";
}

export type Stagnation =
  | { stagnant: false; reason: "insufficient_rounds" | "improving"; window: number; considered: number[] }
  | {
      stagnant: true;
      reason: "all_abandoned" | "ties_only" | "no_improvement";
      window: number;
      considered: number[];
      abandoned: number;
      ties: number;
    };

export function detectStagnation(rounds: readonly RoundSummary[], window = STAGNATION_WINDOW): Stagnation {
  const ran = rounds
    .filter((r) => r.outcome !== "skipped")
    .sort((a, b) => b.round_seq - a.round_seq)
    .slice(0, window);
  const considered = ran.map((r) => r.round_seq);
  if (ran.length < window) return { stagnant: false, reason: "insufficient_rounds", window, considered };
  if (ran.some((r) => r.outcome === "committed" && r.verdict === "improves"))
    return { stagnant: false, reason: "improving", window, considered };
  const abandoned = ran.filter((r) => r.outcome === "abandoned").length;
  const ties = ran.length - abandoned;
  const reason = abandoned === ran.length ? "all_abandoned" : ties === ran.length ? "ties_only" : "no_improvement";
  return { stagnant: true, reason, window, considered, abandoned, ties };
}
