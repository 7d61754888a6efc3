import { describe, expect, it } from "vitest";
import {
  calculateError,
  categorize,
  confidenceOf,
  DEFAULT_THRESHOLDS,
  emptyUserModel,
  extract,
  inferSatisfaction,
  predict,
  topicSurprise,
  updateModel,
  type Prediction,
} from "../../../src/prediction";
import { EN, metrics, NOW, ZH } from "./helpers";

const COLD: Prediction = {
  expected_satisfaction: 0.7,
  expected_follow_up_rate: 0.3,
  expected_topic: null,
  confidence: 0,
  timestamp: NOW.toISOString(),
  expected_topics: [],
  expected_correction_rate: null,
};

describe("predict", () => {
  it("answers the cold start (0.7, 0.3, null, 0.0) without a model, or with a model of no conversation", () => {
    expect(predict(null, "hello", NOW)).toEqual(COLD);
    expect(predict(emptyUserModel(NOW), "hello", NOW)).toEqual(COLD);
  });

  it("predicts from the model's means, heaviest topic and maturity", () => {
    const model = updateModel(null, extract(EN), 0.4, NOW);
    expect(predict(model, "anything", NOW)).toEqual({
      expected_satisfaction: 0.4,
      expected_follow_up_rate: 0.333333333,
      // Five topics of weight 1: ties in code-unit order.
      expected_topic: "configure",
      confidence: 0.02,
      timestamp: NOW.toISOString(),
      expected_topics: ["configure", "deploy", "pipeline", "staging", "wrong"],
      expected_correction_rate: 0.333333333,
    });
  });

  it("keeps the cold-start value for a statistic the model has not observed (unknown is not 0)", () => {
    const model = { ...emptyUserModel(NOW), total_conversations: 3 };
    const p = predict(model, "", NOW);
    expect(p.expected_satisfaction).toBe(0.7);
    expect(p.expected_follow_up_rate).toBe(0.3);
    expect(p.expected_correction_rate).toBeNull();
    expect(p.confidence).toBe(0.06);
  });

  it("does not let the first message change the prediction", () => {
    const model = updateModel(null, extract(ZH), 0.3, NOW);
    expect(predict(model, "something else entirely", NOW)).toEqual(predict(model, "請幫我部署", NOW));
  });
});

describe("confidence", () => {
  it("is min(n, 50) / 50", () => {
    const at = (n: number) => confidenceOf({ total_conversations: n });
    expect([at(0), at(1), at(10), at(25), at(49), at(50), at(51), at(5000)]).toEqual([0, 0.02, 0.2, 0.5, 0.98, 1, 1, 1]);
    expect(confidenceOf(null)).toBe(0);
  });

  it("reaches 1 after 50 conversations through updateModel", () => {
    let model = null;
    for (let i = 0; i < 50; i++) {
      model = updateModel(model, extract(EN), 0.5, NOW);
      expect(predict(model, "", NOW).confidence).toBe((i + 1) / 50);
    }
    expect(predict(updateModel(model, extract(EN), 0.5, NOW), "", NOW).confidence).toBe(1);
  });
});

describe("inferSatisfaction (§3.4)", () => {
  const s = (user_corrections: number, user_follow_ups: number, feedback_signal: number | null = null) =>
    inferSatisfaction({ user_corrections, user_follow_ups, feedback_signal });
  it("is 0.7 − 0.3·corrections − 0.1·max(0, follow-ups − 1) ± feedback, clamped into [0, 1]", () => {
    expect(s(0, 0)).toBe(0.7);
    expect(s(0, 1)).toBe(0.7); // the first follow-up is free
    expect(s(1, 0)).toBe(0.4);
    expect(s(0, 3)).toBe(0.5);
    expect(s(1, 2, 0.3)).toBe(0.6);
    expect(s(0, 1, 0.2)).toBe(0.9);
    expect(s(0, 0, -0.4)).toBe(0.3);
    expect(s(0, 0, 0.4)).toBe(1); // 1.1 clamped
    expect(s(2, 4, -0.4)).toBe(0); // −0.6 clamped
    expect(inferSatisfaction(extract(ZH))).toBe(0.3);
    expect(inferSatisfaction(extract(EN, [{ polarity: "positive", strength: 0.3 }]))).toBe(0.7);
  });
});

describe("topicSurprise (§3.5)", () => {
  it("is the Jaccard distance of ASCII words and of CJK bigrams, the larger of the two", () => {
    expect(topicSurprise(["deploy", "staging"], ["deploy", "staging"])).toBe(0);
    expect(topicSurprise(["deploy", "staging"], ["deploy", "terraform"])).toBe(0.666666667);
    expect(topicSurprise(["部署", "環境"], ["部署", "網址"])).toBe(0.666666667);
    // ASCII 1 − 1/2 = 0.5, CJK 1 − 1/3 = 0.667: the larger.
    expect(topicSurprise(["deploy", "staging", "部署"], ["deploy", "部署", "環境", "網址"])).toBe(0.666666667);
    // ASCII 1 − 1/3 = 0.667, CJK 1 − 1/2 = 0.5: the larger again.
    expect(topicSurprise(["deploy", "staging", "部署", "環境"], ["deploy", "terraform", "部署"])).toBe(0.666666667);
    // A switch of language: each script is on one side only.
    expect(topicSurprise(["deploy"], ["部署"])).toBe(1);
    expect(topicSurprise(["deploy", "部署"], ["deploy", "部署", "環境"])).toBe(0.5);
  });

  it("is 0 with nothing to compare: no expectation, only short words, or no actual topic", () => {
    expect(topicSurprise(null, ["deploy"])).toBe(0);
    expect(topicSurprise([], ["deploy"])).toBe(0);
    expect(topicSurprise(["go", "db"], ["api"])).toBe(0);
    expect(topicSurprise(["deploy"], [])).toBe(0);
  });

  it("takes a single topic or a text, tokenized with no stopword list", () => {
    expect(topicSurprise("deploy", ["deploy", "pipeline"])).toBe(0.5);
    expect(topicSurprise("Deploy the staging pipeline", ["deploy", "pipeline"])).toBe(0.5); // {deploy, the, staging, pipeline}
  });
});

describe("calculateError (§3.5)", () => {
  it("scores a cold start against a Chinese conversation: significant", () => {
    const e = calculateError(COLD, extract(ZH), DEFAULT_THRESHOLDS);
    // inferred 0.3, Δ 0.4 → 0.16; no expected topic → 0; correction at cold start → 0.2;
    // follow-up rate 2/3 − 0.3 = 0.37 > 0.25 → 0.2.
    expect(e).toMatchObject({
      inferred_satisfaction: 0.3,
      delta_satisfaction: 0.4,
      topic_surprise: 0,
      unexpected_correction: true,
      unexpected_follow_up: true,
      composite_error: 0.56,
      category: "significant",
    });
    expect(e.prediction).toBe(COLD);
    expect(e.actual).toEqual(extract(ZH));
  });

  it("scores a cold start against an English conversation: moderate", () => {
    // inferred 0.4, Δ 0.3 → 0.12; correction 0.2; follow-up rate 1/3 is within 0.3 + 0.25.
    expect(calculateError(COLD, extract(EN), DEFAULT_THRESHOLDS)).toMatchObject({
      delta_satisfaction: 0.3,
      unexpected_correction: true,
      unexpected_follow_up: false,
      composite_error: 0.32,
      category: "moderate",
    });
  });

  it("scores a mature prediction, with topic surprise, expected corrections and the current thresholds", () => {
    const p: Prediction = {
      ...COLD,
      expected_satisfaction: 0.9,
      expected_follow_up_rate: 0.1,
      expected_topic: "pipeline",
      expected_topics: ["pipeline", "staging", "deploy", "kubernetes"],
      expected_correction_rate: 0.6,
      confidence: 1,
    };
    const actual = extract(EN, [{ polarity: "negative", strength: 0.4 }]);
    // inferred 0.7 − 0.3 − 0.4 = 0, Δ 0.9 → 0.36; topics 3 shared of 6 → 0.5 → 0.1; corrections expected
    // (0.6 ≥ 0.5); follow-up 1/3 − 0.1 = 0.23 ≤ 0.25.
    const e = calculateError(p, actual, DEFAULT_THRESHOLDS);
    expect(e).toMatchObject({
      inferred_satisfaction: 0,
      delta_satisfaction: 0.9,
      topic_surprise: 0.5,
      unexpected_correction: false,
      unexpected_follow_up: false,
      composite_error: 0.46,
      category: "moderate",
    });
    expect(calculateError(p, actual, { negligible_upper: 0.1, moderate_upper: 0.45, significant_upper: 0.9 }).category).toBe("significant");
  });

  it("keeps the sign of Δsatisfaction and weighs its absolute value", () => {
    // Expected 0.2, inferred 0.7: Δ −0.5 → 0.2.
    const e = calculateError(
      { ...COLD, expected_satisfaction: 0.2, expected_follow_up_rate: 1 },
      metrics({ user_corrections: 0, user_follow_ups: 0 }),
      DEFAULT_THRESHOLDS,
    );
    expect(e.delta_satisfaction).toBe(-0.5);
    expect(e.composite_error).toBe(0.2);
  });

  it("puts an error of exactly 0.2 in moderate (0.4 × (0.7 − 0.2) is not 0.19999…)", () => {
    // 0.7 − 0.3 − 0.1 × 2 = 0.2 inferred; corrections expected at exactly 0.5; follow-ups expected at 1.
    const p = { ...COLD, expected_correction_rate: 0.5, expected_follow_up_rate: 1 };
    const e = calculateError(p, metrics({ user_corrections: 1, user_follow_ups: 3 }), DEFAULT_THRESHOLDS);
    expect(e.inferred_satisfaction).toBe(0.2);
    expect(e.unexpected_correction).toBe(false);
    expect(e.composite_error).toBe(0.2);
    expect(e.category).toBe("moderate");
  });

  it("flags a correction as unexpected below a 0.5 expected correction rate, or at cold start", () => {
    const with1 = metrics({ user_corrections: 1 });
    expect(calculateError({ ...COLD, expected_correction_rate: 0.49 }, with1, DEFAULT_THRESHOLDS).unexpected_correction).toBe(true);
    expect(calculateError({ ...COLD, expected_correction_rate: 0.5 }, with1, DEFAULT_THRESHOLDS).unexpected_correction).toBe(false);
    expect(calculateError(COLD, with1, DEFAULT_THRESHOLDS).unexpected_correction).toBe(true);
    expect(calculateError(COLD, metrics({ user_corrections: 0 }), DEFAULT_THRESHOLDS).unexpected_correction).toBe(false);
  });

  it("flags follow-ups when the rate exceeds the expected rate by more than 0.25", () => {
    const at = (rate: number | null) => calculateError(COLD, metrics({ follow_up_rate: rate }), DEFAULT_THRESHOLDS).unexpected_follow_up;
    expect(at(0.55)).toBe(false); // 0.55 − 0.3 is 0.25000000000000006 in binary: not more than 0.25
    expect(at(0.56)).toBe(true);
    expect(at(1)).toBe(true);
    expect(at(null)).toBe(false);
  });

  it("reaches 1 at most: every term at its maximum, or a prediction out of range", () => {
    const p = { ...COLD, expected_satisfaction: 1, expected_topics: ["kubernetes"], expected_follow_up_rate: 0 };
    const actual = metrics({ user_corrections: 3, follow_up_rate: 1, feedback_signal: -0.4 });
    expect(calculateError(p, actual, DEFAULT_THRESHOLDS)).toMatchObject({ composite_error: 1, category: "critical", topic_surprise: 1 });
    expect(calculateError({ ...p, expected_satisfaction: 2 }, actual, DEFAULT_THRESHOLDS).composite_error).toBe(1);
  });
});

describe("categorize", () => {
  it("uses exclusive upper bounds 0.2 / 0.5 / 0.8 by default", () => {
    const c = (x: number) => categorize(x, DEFAULT_THRESHOLDS);
    expect([c(0), c(0.199), c(0.2), c(0.499), c(0.5), c(0.799), c(0.8), c(1)]).toEqual([
      "negligible",
      "negligible",
      "moderate",
      "moderate",
      "significant",
      "significant",
      "critical",
      "critical",
    ]);
  });
});
