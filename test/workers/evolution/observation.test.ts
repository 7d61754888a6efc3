import { describe, expect, it } from "vitest";
import type { VersionMetrics } from "../../../src/evolution/gvu-types";
import { MAX_EXTENSIONS, observationEnd, observationVerdict } from "../../../src/evolution/observation";
import { NOW } from "./playbook-helpers";

const m = (over: Partial<VersionMetrics> = {}): VersionMetrics => ({
  positive_feedback_ratio: 0.72,
  avg_prediction_error: 0.35,
  user_correction_rate: 0.12,
  contract_violations: 1,
  conversations_count: 45,
  ...over,
});
const verdict = (post: Partial<VersionMetrics> | null, extensions = 0) =>
  observationVerdict({ pre: m(), post: post === null ? null : m(post), now: NOW, extensions });

describe("observationVerdict", () => {
  it("extends by 12 h with fewer than 5 conversations or no post metrics; 5 is enough", () => {
    expect(verdict({ conversations_count: 4, positive_feedback_ratio: 0.1 })).toEqual({
      verdict: "extend",
      reason: "too_few_conversations",
      hours: 12,
      observation_end: new Date(NOW.getTime() + 12 * 3_600_000).toISOString(),
    });
    expect(verdict(null)).toMatchObject({ verdict: "extend", reason: "no_post_metrics" });
    expect(verdict({ conversations_count: 0, positive_feedback_ratio: 0, avg_prediction_error: 0 })).toMatchObject({ verdict: "extend" });
    expect(verdict({ conversations_count: 5 })).toEqual({ verdict: "confirm", reason: "held" });
  });

  it("rolls back when the feedback ratio drops by more than 3 points, not at exactly 3", () => {
    expect(verdict({ positive_feedback_ratio: 0.69 })).toEqual({ verdict: "confirm", reason: "held" }); // −0.03 (0.030000000000000027 in binary)
    expect(verdict({ positive_feedback_ratio: 0.6899 })).toMatchObject({ verdict: "rollback", reason: "feedback_dropped" });
    expect(verdict({ positive_feedback_ratio: 0.9 })).toMatchObject({ verdict: "confirm" });
  });

  it("rolls back when the prediction error rises by more than 5 points, not at exactly 5", () => {
    expect(verdict({ avg_prediction_error: 0.4 })).toEqual({ verdict: "confirm", reason: "held" }); // +0.05
    expect(verdict({ avg_prediction_error: 0.4001 })).toMatchObject({ verdict: "rollback", reason: "error_rose" });
  });

  it("rolls back when contract violations increase, and not when they stay", () => {
    expect(verdict({ contract_violations: 2 })).toMatchObject({ verdict: "rollback", reason: "violations_increased" });
    expect(verdict({ contract_violations: 1 })).toMatchObject({ verdict: "confirm" });
  });

  it("checks in the seed's order: conversations first, then feedback, error, violations", () => {
    expect(verdict({ conversations_count: 3, positive_feedback_ratio: 0.1, contract_violations: 9 })).toMatchObject({ verdict: "extend" });
    expect(verdict({ positive_feedback_ratio: 0.5, avg_prediction_error: 0.9, contract_violations: 9 })).toMatchObject({
      reason: "feedback_dropped",
    });
    expect(verdict({ avg_prediction_error: 0.9, contract_violations: 9 })).toMatchObject({ reason: "error_rose" });
  });

  it("does not read an unmeasured feedback ratio as 0", () => {
    expect(verdict({ positive_feedback_ratio: null })).toMatchObject({ verdict: "confirm" });
    expect(
      observationVerdict({ pre: m({ positive_feedback_ratio: null }), post: m({ positive_feedback_ratio: 0 }), now: NOW, extensions: 0 }),
    ).toMatchObject({
      verdict: "confirm",
    });
  });

  it("rolls back a change still without enough conversations after the last extension", () => {
    expect(verdict({ conversations_count: 2 }, MAX_EXTENSIONS - 1)).toMatchObject({ verdict: "extend" });
    expect(verdict({ conversations_count: 2 }, MAX_EXTENSIONS)).toMatchObject({ verdict: "rollback", reason: "insufficient_data_at_cap" });
  });

  it("ends the first window 24 h after the apply", () => {
    expect(observationEnd(NOW)).toBe(new Date(NOW.getTime() + 24 * 3_600_000).toISOString());
  });
});
