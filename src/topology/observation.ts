/** An override under observation, as the judgement needs it. */
export interface Observed {
  baselineRejectRate: number;
  observeUntil: string;
  extensions: number;
}

/** The to_agent's settled goal tasks of the class since the override was approved. */
export interface ObservedSamples {
  samples: number;
  rejects: number;
}

export type ObservationVerdict =
  | { verdict: "keep" }
  | { verdict: "rolled_back"; reason: "not_better" | "insufficient_samples" }
  | { verdict: "confirmed" }
  | { verdict: "extended"; observeUntil: string };

const EPSILON = 1e-12;

/**
 * Seed 000 step 5 as API.md clarifies it. During observation, once the to_agent has a settled sample
 * in the class and its reject rate is at or above the from_agent's baseline → rolled back at once. At
 * the window's end: at least min_samples (and a lower rate) → confirmed; fewer → extended once by
 * observe_hours, and at the end of the extension still too few → rolled back (conservative).
 */
export function judgeObservation(
  o: Observed,
  seen: ObservedSamples,
  rule: { min_samples: number; observe_hours: number },
  now: Date,
): ObservationVerdict {
  if (seen.samples > 0 && seen.rejects / seen.samples >= o.baselineRejectRate - EPSILON)
    return { verdict: "rolled_back", reason: "not_better" };
  if (now.toISOString() < o.observeUntil) return { verdict: "keep" };
  if (seen.samples >= rule.min_samples) return { verdict: "confirmed" };
  if (o.extensions === 0) {
    return { verdict: "extended", observeUntil: new Date(Date.parse(o.observeUntil) + rule.observe_hours * 3_600_000).toISOString() };
  }
  return { verdict: "rolled_back", reason: "insufficient_samples" };
}
