import { CONSECUTIVE_CAP, CONSECUTIVE_ESCALATION } from "./constants";
import type { PredictionError } from "./engine";
import { isSignificantOrWorse } from "./thresholds";

/**
 * Seed 003 §3.8 (DualProcessRouter). `reason` says why an emergency fired: one critical error, or the
 * third (or later) significant-or-worse error in a row.
 */
export type EvolutionAction =
  | { kind: "none" }
  | { kind: "store_episodic"; content: string; importance: number }
  | { kind: "trigger_reflection"; context: string }
  | { kind: "trigger_emergency_evolution"; context: string; reason: "critical" | "consecutive_significant" };

export interface RouteResult {
  action: EvolutionAction;
  /**
   * The run of significant-or-worse errors including this one, capped at 10; 0 after a lower one. The
   * caller keeps the counter (the seed keeps one per agent: consecutive_significant_count(agent_id)).
   */
  consecutive_significant: number;
}

/** A stored counter that is not a whole number in [0, 10] reads as the nearest one (NaN: 0). */
function sanitizeCount(n: number): number {
  if (!Number.isFinite(n)) return n === Infinity ? CONSECUTIVE_CAP : 0;
  return Math.min(CONSECUTIVE_CAP, Math.max(0, Math.floor(n)));
}

const f2 = (x: number) => x.toFixed(2);
const f3 = (x: number) => x.toFixed(3);

/** One line for episodic memory: what was expected, what happened. */
export function episodicContent(e: PredictionError): string {
  return (
    `Prediction deviation (${e.category}, error ${f3(e.composite_error)}): expected satisfaction ${f2(e.prediction.expected_satisfaction)}, ` +
    `inferred ${f2(e.inferred_satisfaction)}; topic surprise ${f2(e.topic_surprise)}; ` +
    `corrections ${e.actual.user_corrections}${e.unexpected_correction ? " (unexpected)" : ""}; ` +
    `follow-ups ${e.actual.user_follow_ups}${e.unexpected_follow_up ? " (unexpected)" : ""}; ` +
    `topics: ${e.actual.extracted_topics.join(", ") || "none"}.`
  );
}

/** The report a reflection or an evolution round starts from: every number the error was made of. */
export function reflectionContext(e: PredictionError, consecutive: number): string {
  const a = e.actual;
  const lines = [
    "## Prediction error report",
    `- composite error: ${f3(e.composite_error)} (${e.category}); consecutive significant-or-worse: ${consecutive}`,
    `- confidence of the prediction: ${f2(e.prediction.confidence)}`,
    `- satisfaction: expected ${f2(e.prediction.expected_satisfaction)}, inferred ${f2(e.inferred_satisfaction)} (delta ${f3(e.delta_satisfaction)})`,
    `- topic surprise: ${f3(e.topic_surprise)}; expected topics: ${e.prediction.expected_topics.join(", ") || "none"}; actual: ${a.extracted_topics.join(", ") || "none"}`,
  ];
  if (e.unexpected_correction)
    lines.push(`- unexpected correction: the user corrected the agent ${a.user_corrections} time(s) where few corrections were expected`);
  if (e.unexpected_follow_up)
    lines.push(
      `- unexpected follow-ups: ${a.user_follow_ups} of ${a.follow_up_opportunities} replies followed up (expected rate ${f2(e.prediction.expected_follow_up_rate)})`,
    );
  lines.push(
    "## Conversation",
    `- messages: ${a.message_count} (${a.user_message_count} user, ${a.assistant_message_count} assistant)`,
    `- mean reply length: ${a.avg_assistant_response_length === null ? "no reply" : `${Math.round(a.avg_assistant_response_length)} characters`}`,
    `- language: ${a.detected_language}; feedback: ${a.feedback_signal === null ? "none" : f2(a.feedback_signal)}`,
  );
  return lines.join("\n");
}

/**
 * §3.8. negligible → none; moderate → store_episodic (importance = the composite error, in [0, 1]);
 * significant → trigger_reflection, or trigger_emergency_evolution once this is the 3rd (or later)
 * significant-or-worse error in a row; critical → trigger_emergency_evolution. The counter counts
 * significant and critical errors in a row, is capped at 10 (§3.3) and drops to 0 on a lower one.
 */
export function route(error: PredictionError, consecutiveSignificantBefore: number): RouteResult {
  const before = sanitizeCount(consecutiveSignificantBefore);
  if (!isSignificantOrWorse(error.category)) {
    const action: EvolutionAction =
      error.category === "moderate"
        ? { kind: "store_episodic", content: episodicContent(error), importance: error.composite_error }
        : { kind: "none" };
    return { action, consecutive_significant: 0 };
  }
  const consecutive = Math.min(CONSECUTIVE_CAP, before + 1);
  const context = reflectionContext(error, consecutive);
  if (error.category === "critical")
    return { action: { kind: "trigger_emergency_evolution", context, reason: "critical" }, consecutive_significant: consecutive };
  if (consecutive >= CONSECUTIVE_ESCALATION)
    return {
      action: { kind: "trigger_emergency_evolution", context, reason: "consecutive_significant" },
      consecutive_significant: consecutive,
    };
  return { action: { kind: "trigger_reflection", context }, consecutive_significant: consecutive };
}
