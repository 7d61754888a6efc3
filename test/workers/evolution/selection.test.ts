import { describe, expect, it } from "vitest";
import { ENTRY_OVERHEAD_TOKENS, estimateTokens, selectEntries, signalMatches, signalsFromError } from "../../../src/evolution/selection";
import type { PredictionError } from "../../../src/prediction";
import { entry, NOW } from "./playbook-helpers";

const ok = (n: number) => Array.from({ length: n }, () => ({ at: NOW.toISOString(), outcome: "success" as const }));
const bad = (n: number) => Array.from({ length: n }, () => ({ at: NOW.toISOString(), outcome: "failed" as const }));

describe("estimateTokens", () => {
  it("counts ASCII at 4 characters a token and every other code point as one", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abcd")).toBe(1);
    expect(estimateTokens("abcde")).toBe(2);
    expect(estimateTokens("返金ポリシー")).toBe(6);
    expect(estimateTokens("ok 返金")).toBe(1 + 2);
    expect(estimateTokens("😀")).toBe(1);
  });
});

describe("signalMatches", () => {
  const turn = { tokens: ["correction"], text: "Can I get a REFUND for the rapid plan? 返金したい" };
  it("matches vocabulary tokens against the turn's raised tokens only", () => {
    expect(signalMatches("correction", turn)).toBe(true);
    expect(signalMatches("follow_up", turn)).toBe(false);
    expect(signalMatches("follow_up", { tokens: [], text: "follow_up" })).toBe(false);
  });
  it("matches ASCII keywords as whole words, case-insensitively, and CJK as substrings", () => {
    expect(signalMatches("refund", turn)).toBe(true);
    expect(signalMatches("api|deploy", turn)).toBe(false);
    expect(signalMatches("rapid", turn)).toBe(true);
    expect(signalMatches("rap", turn)).toBe(false);
    expect(signalMatches("invoice|返金", turn)).toBe(true);
  });
  it("raises tokens from a prediction error", () => {
    const e = {
      category: "significant",
      unexpected_correction: true,
      unexpected_follow_up: false,
      topic_surprise: 0.5,
      inferred_satisfaction: 0.4,
      actual: { feedback_signal: null },
    } as unknown as PredictionError;
    expect(signalsFromError(e)).toEqual(["significant_error", "correction", "topic_surprise", "low_satisfaction"]);
  });
});

describe("selectEntries", () => {
  const entries = [
    entry({ entry_id: "e_top", applications: ok(5), content: "Top rule by net score." }),
    entry({ entry_id: "e_match_low", applications: ok(1), signals_match: ["refund"], content: "Matched rule, low score." }),
    entry({ entry_id: "e_match_high", applications: ok(3), signals_match: ["correction"], content: "Matched rule, high score." }),
    entry({ entry_id: "e_mid", applications: ok(2), content: "Middle rule." }),
    entry({ entry_id: "e_tie_b", applications: ok(2), success_streak: 1, content: "Tie rule b." }),
    entry({ entry_id: "e_tie_a", applications: ok(2), success_streak: 1, content: "Tie rule a." }),
    entry({ entry_id: "e_neg", applications: bad(1), content: "Harmful rule." }),
    entry({ entry_id: "e_neg_match", applications: bad(2), signals_match: ["refund"], content: "Harmful but matched." }),
    entry({ entry_id: "e_probation", state: "probation", applications: ok(4), content: "Probation rule." }),
    entry({ entry_id: "e_stale", state: "stale", applications: ok(9), signals_match: ["refund"], content: "Stale rule." }),
    entry({ entry_id: "e_retired", state: "retired", applications: ok(9), content: "Retired rule." }),
  ];
  const turn = { tokens: ["correction"], text: "I want a refund" };

  it("puts signal matches first (by net score), then the rest by net score, streak and id; never stale, retired or net-negative filler", () => {
    const got = selectEntries(entries, turn, { budget_tokens: 10_000 }).map((s) => s.entry_id);
    expect(got).toEqual(["e_match_high", "e_match_low", "e_neg_match", "e_top", "e_probation", "e_tie_a", "e_tie_b", "e_mid"]);
  });

  it("injects only entry_id, category and content", () => {
    const [first] = selectEntries(entries, turn);
    expect(Object.keys(first!).sort()).toEqual(["category", "content", "entry_id"]);
    expect(first).toEqual({ entry_id: "e_match_high", category: "repair", content: "Matched rule, high score." });
  });

  it("stays within the token budget, skipping an entry too big for the room left and taking a smaller later one", () => {
    const cost = (s: string) => estimateTokens(s) + ENTRY_OVERHEAD_TOKENS;
    const big = entry({ entry_id: "e_big", applications: ok(9), content: "x".repeat(200) });
    const small1 = entry({ entry_id: "e_small1", applications: ok(8), content: "Small one." });
    const small2 = entry({ entry_id: "e_small2", applications: ok(7), content: "Small two." });
    const budget = cost(small1.content) + cost(small2.content);
    expect(cost(big.content)).toBeGreaterThan(budget);
    const got = selectEntries([big, small1, small2], { tokens: [], text: "" }, { budget_tokens: budget });
    expect(got.map((s) => s.entry_id)).toEqual(["e_small1", "e_small2"]);
    expect(selectEntries([big, small1, small2], { tokens: [], text: "" }, { budget_tokens: budget - 1 }).map((s) => s.entry_id)).toEqual([
      "e_small1",
    ]);
    expect(selectEntries([big, small1, small2], { tokens: [], text: "" }, { budget_tokens: 0 })).toEqual([]);
    expect(selectEntries([big, small1, small2], { tokens: [], text: "" }, { budget_tokens: 10_000, max_entries: 1 })).toHaveLength(1);
  });

  it("selects nothing from an empty playbook", () => {
    expect(selectEntries([], turn)).toEqual([]);
  });
});
