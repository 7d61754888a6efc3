import { describe, expect, it } from "vitest";
import {
  EMPTY_STATS,
  emptyUserModel,
  extract,
  MAX_MODEL_TOPICS,
  meanOf,
  predict,
  pushStat,
  updateModel,
  variance,
  type RunningStats,
} from "../../../src/prediction";
import { EN, JA, metrics, NOW, prng, ZH } from "./helpers";

const pushAll = (xs: readonly number[]) => xs.reduce<RunningStats>((s, x) => pushStat(s, x), EMPTY_STATS);

describe("Welford running stats (§3.6)", () => {
  it("gives the population mean and variance (m2 / count) of a known series", () => {
    const s = pushAll([2, 4, 4, 4, 5, 5, 7, 9]);
    expect(s.count).toBe(8);
    expect(s.mean).toBe(5);
    expect(variance(s)).toBe(4); // the sample variance would be 32 / 7
  });

  it("agrees with a two-pass mean and variance on 20,000 seeded random values", () => {
    const rand = prng(20260301);
    for (const [offset, scale] of [
      [0, 1],
      [1e6, 3], // a large mean: the naive sum-of-squares formula loses digits here, Welford must not
      [-50, 1000],
    ] as const) {
      const xs = Array.from({ length: 20_000 }, () => offset + scale * (rand() + rand() + rand() - 1.5));
      const s = pushAll(xs);
      const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
      const v = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length;
      expect(s.count).toBe(xs.length);
      expect(Math.abs(s.mean - mean)).toBeLessThan(1e-9 * Math.max(1, Math.abs(mean)));
      expect(Math.abs(variance(s)! - v) / v).toBeLessThan(1e-9);
    }
  });

  it("returns new stats, ignores values that are not finite, and knows nothing before the first value", () => {
    const s = pushAll([1, 2]);
    const frozen = Object.freeze({ ...s });
    const t = pushStat(frozen, 3);
    expect(frozen).toEqual(s);
    expect(t).toEqual({ count: 3, mean: 2, m2: 2 });
    expect(pushStat(t, Number.NaN)).toBe(t);
    expect(pushStat(t, Number.POSITIVE_INFINITY)).toBe(t);
    expect(variance(EMPTY_STATS)).toBeNull();
    expect(meanOf(EMPTY_STATS)).toBeNull();
    expect(variance(pushAll([7]))).toBe(0);
  });
});

describe("updateModel", () => {
  it("starts a model from the first conversation", () => {
    const m = updateModel(null, extract(EN), 0.4, NOW);
    expect(m).toEqual({
      preferred_response_length: { count: 1, mean: 43.333333333, m2: 0 },
      avg_satisfaction: { count: 1, mean: 0.4, m2: 0 },
      topic_distribution: { pipeline: 1, staging: 1, configure: 1, deploy: 1, wrong: 1 },
      active_hours: [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      correction_rate: { count: 1, mean: 0.333333333, m2: 0 },
      follow_up_rate: { count: 1, mean: 0.333333333, m2: 0 },
      language_preference: { en: 1 },
      total_conversations: 1,
      updated_at: NOW.toISOString(),
    });
    expect(JSON.parse(JSON.stringify(m))).toEqual(m);
  });

  it("accumulates conversations in any language without changing the model it was given", () => {
    const one = updateModel(null, extract(EN), 0.4, NOW);
    const snapshot = structuredClone(one);
    const later = new Date("2026-03-02T00:00:00.000Z");
    const two = updateModel(one, extract(ZH), 0.3, later);
    const three = updateModel(two, extract(JA), 0.7, later);
    expect(one).toEqual(snapshot);
    expect(two.avg_satisfaction.count).toBe(2);
    expect(two.avg_satisfaction.mean).toBeCloseTo(0.35, 12);
    expect(variance(two.avg_satisfaction)).toBeCloseTo(0.0025, 12); // ((0.05)² + (0.05)²) / 2
    expect(three.language_preference).toEqual({ en: 1, zh: 1, ja: 1 });
    expect(three.total_conversations).toBe(3);
    expect(three.active_hours[9]).toBe(3);
    expect(three.updated_at).toBe(later.toISOString());
    expect(three.topic_distribution["環境"]).toBe(1);
  });

  it("leaves a statistic the conversation could not measure as it was, but still counts the conversation", () => {
    const one = updateModel(null, extract(EN), 0.4, NOW);
    const noReply = extract([{ role: "user", content: "anyone there?", at: "garbage" }]);
    const two = updateModel(one, noReply, 0.7, NOW);
    expect(two.preferred_response_length).toEqual(one.preferred_response_length);
    expect(two.follow_up_rate).toEqual(one.follow_up_rate);
    expect(two.active_hours).toEqual(one.active_hours);
    expect(two.correction_rate.count).toBe(2);
    expect(two.total_conversations).toBe(2);
    const nothing = updateModel(two, extract([]), 0.7, NOW);
    expect(nothing.language_preference).toEqual(two.language_preference);
    expect(nothing.correction_rate).toEqual(two.correction_rate);
  });

  it("keeps a topic named like an Object.prototype member as a plain count", () => {
    const m = updateModel(
      updateModel(null, metrics({ extracted_topics: ["constructor", "tostring"] }), 0.7, NOW),
      metrics({ extracted_topics: ["constructor"] }),
      0.7,
      NOW,
    );
    expect(m.topic_distribution).toEqual({ constructor: 2, tostring: 1 });
    expect(predict(m, "", NOW).expected_topic).toBe("constructor");
  });

  it("keeps at most 64 topics, the heaviest", () => {
    let m = updateModel(null, metrics({ extracted_topics: ["keeper"] }), 0.7, NOW);
    m = updateModel(m, metrics({ extracted_topics: ["keeper"] }), 0.7, NOW);
    for (let i = 0; i < 30; i++)
      m = updateModel(m, metrics({ extracted_topics: [0, 1, 2, 3, 4].map((j) => `topic${i * 5 + j}`) }), 0.7, NOW);
    m = updateModel(m, metrics({ extracted_topics: ["zulu"] }), 0.7, NOW);
    expect(Object.keys(m.topic_distribution)).toHaveLength(MAX_MODEL_TOPICS);
    expect(m.topic_distribution.keeper).toBe(2);
    // The last conversation's topic survives the cut among equal weights, though it sorts last.
    expect(m.topic_distribution.zulu).toBe(1);
    expect(predict(m, "", NOW).expected_topic).toBe("keeper");
  });

  it("drops, among equal weights of earlier conversations, the topic last in code-unit order", () => {
    const names = Array.from({ length: 64 }, (_, i) => `topic${String(i).padStart(2, "0")}`);
    const full = { ...emptyUserModel(NOW), total_conversations: 64, topic_distribution: Object.fromEntries(names.map((t) => [t, 1])) };
    const m = updateModel(full, metrics({ extracted_topics: ["newcomer"] }), 0.7, NOW);
    expect(Object.keys(m.topic_distribution)).toHaveLength(64);
    expect(m.topic_distribution.newcomer).toBe(1);
    expect(Object.hasOwn(m.topic_distribution, "topic63")).toBe(false);
    expect(m.topic_distribution.topic00).toBe(1);
    expect(m.topic_distribution.topic62).toBe(1);
  });
});
