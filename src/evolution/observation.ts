import type { VersionMetrics } from "./gvu-types";

/**
 * The legacy observation window's decision (seed 003 §4.5, §8, with the v3 quality-gate fix R5: too
 * few conversations never confirms). After the window (24 h by default), in this order:
 *
 *   post metrics absent, or fewer than 5 conversations → extend by 12 h
 *   positive feedback ratio dropped by more than 0.03  → rollback
 *   average prediction error rose by more than 0.05    → rollback
 *   contract violations increased                      → rollback
 *   otherwise                                          → confirm
 *
 * "3%" and "5%" are read as percentage points of the ratios (0.72 → 0.69 is a 3% drop), the way the
 * OPRO history prints them. Exactly 3% or 5% is within tolerance ("超" is strictly more). A ratio
 * unmeasured on either side (no feedback at all) cannot show a drop: that rule does not fire, and
 * unknown is not read as 0. The seed does not bound the extensions; after 14 (a further week) with
 * still too few conversations the change rolls back: a change never measured does not stay.
 */
export const OBSERVATION_HOURS = 24;
export const EXTENSION_HOURS = 12;
export const MIN_CONVERSATIONS = 5;
export const FEEDBACK_DROP_TOLERANCE = 0.03;
export const ERROR_RISE_TOLERANCE = 0.05;
export const MAX_EXTENSIONS = 14;

export type ObservationVerdict =
  | { verdict: "confirm"; reason: "held" }
  | { verdict: "rollback"; reason: "feedback_dropped" | "error_rose" | "violations_increased" | "insufficient_data_at_cap"; detail: string }
  | { verdict: "extend"; reason: "no_post_metrics" | "too_few_conversations"; hours: number; observation_end: string };

const r9 = (x: number) => Math.round(x * 1e9) / 1e9;

export function observationVerdict(input: {
  pre: VersionMetrics;
  post: VersionMetrics | null;
  now: Date;
  /** Extensions already granted to this version. */
  extensions: number;
  max_extensions?: number;
}): ObservationVerdict {
  const { pre, post } = input;
  if (post === null || post.conversations_count < MIN_CONVERSATIONS) {
    if (input.extensions >= (input.max_extensions ?? MAX_EXTENSIONS))
      return {
        verdict: "rollback",
        reason: "insufficient_data_at_cap",
        detail: `${post?.conversations_count ?? 0} conversations after ${input.extensions} extensions`,
      };
    return {
      verdict: "extend",
      reason: post === null ? "no_post_metrics" : "too_few_conversations",
      hours: EXTENSION_HOURS,
      observation_end: new Date(input.now.getTime() + EXTENSION_HOURS * 3_600_000).toISOString(),
    };
  }
  if (pre.positive_feedback_ratio !== null && post.positive_feedback_ratio !== null) {
    const drop = r9(pre.positive_feedback_ratio - post.positive_feedback_ratio);
    if (drop > FEEDBACK_DROP_TOLERANCE)
      return { verdict: "rollback", reason: "feedback_dropped", detail: `feedback ratio fell by ${drop}` };
  }
  if (pre.avg_prediction_error !== null && post.avg_prediction_error !== null) {
    const rise = r9(post.avg_prediction_error - pre.avg_prediction_error);
    if (rise > ERROR_RISE_TOLERANCE) return { verdict: "rollback", reason: "error_rose", detail: `prediction error rose by ${rise}` };
  }
  if (post.contract_violations > pre.contract_violations)
    return {
      verdict: "rollback",
      reason: "violations_increased",
      detail: `contract violations ${pre.contract_violations} → ${post.contract_violations}`,
    };
  return { verdict: "confirm", reason: "held" };
}

/** When a version applied at `appliedAt` ends its first window. */
export function observationEnd(appliedAt: Date, hours = OBSERVATION_HOURS): string {
  return new Date(appliedAt.getTime() + hours * 3_600_000).toISOString();
}
