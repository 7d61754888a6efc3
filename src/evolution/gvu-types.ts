/**
 * Shared shapes of the legacy GVU path (seed 003 §4, active when `legacy_soul_evolution = true`).
 */

/** §4.3: what the generator returns. */
export interface GeneratorOutput {
  proposed_changes: string;
  rationale: string;
  expected_improvement: string;
}

/** §4.6 VersionMetrics. A ratio nobody could measure (no feedback at all) is null: unknown is not zero. */
export interface VersionMetrics {
  positive_feedback_ratio: number | null;
  avg_prediction_error: number | null;
  user_correction_rate: number | null;
  contract_violations: number;
  conversations_count: number;
}

export type VersionStatus = "observing" | "confirmed" | "rolled_back";

/** A SOUL version as the generator's OPRO history and the verifier's L2/L4 read it. */
export interface SoulVersionSummary {
  version_id: string;
  status: VersionStatus;
  /** The proposal text the version appended. */
  content: string;
  pre: VersionMetrics;
  post: VersionMetrics | null;
  applied_at: string;
  observation_end: string;
}

export type SourceLayer = "L1-Deterministic" | "L2-Historical" | "L3-LLMJudge" | "L4-Trend" | "Generator";

/** §4.7: structured feedback from a refusal to the next generation. */
export interface TextGradient {
  target: string;
  critique: string;
  suggestion: string;
  source_layer: SourceLayer;
  severity: "blocking" | "advisory";
}
