import { describe, expect, it } from "vitest";
import {
  charLength,
  detectLanguage,
  extract,
  extractTopics,
  feedbackSignal,
  isCorrection,
  jaccardDistance,
  tokenize,
} from "../../../src/prediction";
import { conversation, EN, JA, ZH } from "./helpers";

describe("extract", () => {
  it("measures a Chinese conversation: one correction, two follow-ups over three replies, zh, bigram topics", () => {
    expect(extract(ZH)).toEqual({
      message_count: 6,
      user_message_count: 3,
      assistant_message_count: 3,
      avg_assistant_response_length: 14, // (10 + 9 + 23) / 3 characters
      user_follow_ups: 2,
      follow_up_opportunities: 3,
      follow_up_rate: 0.666666667,
      user_corrections: 1,
      correction_rate: 0.333333333,
      detected_language: "zh",
      // 環境 three times, 部署 / 生產 / 產環 twice, then the first bigram seen once.
      extracted_topics: ["環境", "部署", "生產", "產環", "請幫"],
      feedback_signal: null,
      hour_of_day: 9,
    });
  });

  it("measures an English conversation: three correction patterns in one message count once, one follow-up", () => {
    const m = extract(EN);
    expect(m.user_corrections).toBe(1);
    expect(m.user_follow_ups).toBe(1); // "Thanks!"; the long correction has no "?"
    expect(m.follow_up_rate).toBe(0.333333333);
    expect(m.avg_assistant_response_length).toBe(43.333333333); // (44 + 71 + 15) / 3
    expect(m.detected_language).toBe("en");
    // pipeline and staging twice; then first appearance; the, for, how, please, thanks are stopwords; "no", "s" too short.
    expect(m.extracted_topics).toEqual(["pipeline", "staging", "configure", "deploy", "wrong"]);
  });

  it("measures a Japanese conversation as ja, with katakana bigrams and no correction (not in the seed's list)", () => {
    const m = extract(JA);
    expect(m.detected_language).toBe("ja");
    expect(m.user_corrections).toBe(0);
    expect(m.user_follow_ups).toBe(1);
    expect(m.follow_up_rate).toBe(0.5);
    expect(m.avg_assistant_response_length).toBe(17); // (12 + 22) / 2
    expect(m.extracted_topics).toEqual(["サー", "ーバ", "バー", "デプ", "プロ"]);
  });

  it("reports what a conversation cannot show as null, not 0", () => {
    const m = extract([{ role: "user", content: "hello?", at: "not a time" }]);
    expect(m.avg_assistant_response_length).toBeNull();
    expect(m.follow_up_rate).toBeNull();
    expect(m.follow_up_opportunities).toBe(0);
    expect(m.hour_of_day).toBeNull();
    expect(m.feedback_signal).toBeNull();
    const empty = extract([]);
    expect(empty.correction_rate).toBeNull();
    expect(empty.detected_language).toBe("unknown");
    expect(empty.extracted_topics).toEqual([]);
  });

  it("takes the hour of the first user message in UTC", () => {
    const turns = conversation(["Hi there, welcome back.", "What is new?"], "assistant");
    turns[1]!.at = "2026-03-01T23:59:00+09:00"; // 14:59 UTC
    expect(extract(turns).hour_of_day).toBe(14);
  });
});

describe("follow-ups over the 3-message window", () => {
  const long = "This is a longer message that explains everything in great detail, no question.";
  it("counts a user message after user → assistant when it is short or asks", () => {
    expect(extract(conversation(["first question", "answer", long])).user_follow_ups).toBe(0);
    expect(extract(conversation(["first question", "answer", `${long}?`])).user_follow_ups).toBe(1);
    expect(extract(conversation(["first question", "answer", `${long}？`])).user_follow_ups).toBe(1);
    expect(extract(conversation(["first question", "answer", "x".repeat(49)])).user_follow_ups).toBe(1);
    expect(extract(conversation(["first question", "answer", "x".repeat(50)])).user_follow_ups).toBe(0);
    // Length after trimming: 45 characters padded with whitespace to 55 are still short.
    expect(extract(conversation(["first question", "answer", `${"x".repeat(45)}\n\n     \n   `])).user_follow_ups).toBe(1);
    // 49 Han characters are 49 characters (147 UTF-8 bytes): still short.
    expect(extract(conversation(["first question", "answer", "部".repeat(49)])).user_follow_ups).toBe(1);
  });

  it("needs the full user → assistant → user window", () => {
    // The first user message, and a user message after a user message, are never follow-ups.
    const t = conversation(["short?", "reply"]);
    expect(extract(t).user_follow_ups).toBe(0);
    const twoUsers = [
      ...t,
      { role: "user" as const, content: "ok?", at: t[1]!.at },
      { role: "user" as const, content: "hello?", at: t[1]!.at },
    ];
    expect(extract(twoUsers).user_follow_ups).toBe(1);
    // assistant → user → (nothing before): an assistant opening is not a window.
    expect(extract(conversation(["Welcome!", "hi?", "hello", "ok?"], "assistant")).user_follow_ups).toBe(1);
  });

  it("counts as chances to follow up only assistant messages that answer a user message", () => {
    const t = conversation(["question", "answer"]);
    const twoReplies = [
      ...t,
      { role: "assistant" as const, content: "and more", at: t[1]!.at },
      { role: "user" as const, content: "ok?", at: t[1]!.at },
    ];
    expect(extract(twoReplies)).toMatchObject({ follow_up_opportunities: 1, user_follow_ups: 0, follow_up_rate: 0 });
    expect(extract(conversation(["Welcome!", "hi?", "hello"], "assistant"))).toMatchObject({
      follow_up_opportunities: 1,
      follow_up_rate: 0,
    });
  });
});

describe("correction patterns", () => {
  it("matches the seed's list case-insensitively, with either apostrophe", () => {
    for (const text of [
      "這不是我要的",
      "你錯了",
      "不對喔",
      "重來一次",
      "不要這樣",
      "請修改標題",
      "That is NOT WHAT I asked",
      "that's wrong",
      "That’s wrong",
      "No, use the other one",
      "INCORRECT answer",
      "Please fix it",
      "try again",
    ])
      expect(isCorrection(text), text).toBe(true);
    for (const text of ["No problem", "no,thanks", "thats wrong", "错了", "不对", "違います", "great, thanks"])
      expect(isCorrection(text), text).toBe(false);
  });
});

describe("feedback signal", () => {
  it("clamps each strength into 0.2–0.4, sums signed, clamps the sum into ±0.4, null without feedback", () => {
    expect(feedbackSignal(undefined)).toBeNull();
    expect(feedbackSignal([])).toBeNull();
    expect(feedbackSignal([{ polarity: "positive", strength: 0.1 }])).toBe(0.2);
    expect(feedbackSignal([{ polarity: "negative", strength: 0.9 }])).toBe(-0.4);
    expect(feedbackSignal([{ polarity: "positive", strength: 0.3 }])).toBe(0.3);
    expect(
      feedbackSignal([
        { polarity: "positive", strength: 0.3 },
        { polarity: "positive", strength: 0.3 },
      ]),
    ).toBe(0.4);
    expect(
      feedbackSignal([
        { polarity: "positive", strength: 0.3 },
        { polarity: "negative", strength: 0.25 },
      ]),
    ).toBe(0.05);
    expect(feedbackSignal([{ polarity: "positive", strength: Number.NaN }])).toBeNull();
    expect(extract(EN, [{ polarity: "negative", strength: 0.35 }]).feedback_signal).toBe(-0.35);
  });
});

describe("text", () => {
  it("tokenizes ASCII words longer than 2 characters and Han/katakana bigrams", () => {
    expect(tokenize("Deploy the API to k8s, go! v2 DB-migration")).toEqual({
      ascii: ["deploy", "the", "api", "k8s", "migration"],
      cjk: [],
    });
    expect(tokenize("部署到生產環境。好")).toEqual({ ascii: [], cjk: ["部署", "署到", "到生", "生產", "產環", "環境"] });
    expect(tokenize("デプロイの手順")).toEqual({ ascii: [], cjk: ["デプ", "プロ", "ロイ", "手順"] });
    expect(tokenize("123 4567")).toEqual({ ascii: [], cjk: [] });
    // A Han character outside the BMP (U+20000, a surrogate pair) is one character of a bigram.
    expect(tokenize("\u{20000}部署")).toEqual({ ascii: [], cjk: ["\u{20000}部", "部署"] });
  });

  it("counts characters as code points", () => {
    expect(charLength("部署")).toBe(2);
    expect(charLength("ok 👍\u{20000}")).toBe(5);
    expect(charLength("")).toBe(0);
  });

  it("detects zh, ja (any kana), en and unknown from the letters", () => {
    expect(detectLanguage("請幫我部署")).toBe("zh");
    expect(detectLanguage("デプロイして")).toBe("ja");
    expect(detectLanguage("日本語の文章")).toBe("ja");
    expect(detectLanguage("deploy the service")).toBe("en");
    // 3 Han of 16 letters (19%) is not more than 30%.
    expect(detectLanguage("deploy service 部署環")).toBe("en");
    // 2 of 8 (25%) and exactly 3 of 10 (30%) are not either.
    expect(detectLanguage("deploy 部署")).toBe("en");
    expect(detectLanguage("deploy a 部署環")).toBe("en");
    // 3 Han of 9 letters (33%) is.
    expect(detectLanguage("deploy 部署環")).toBe("zh");
    expect(detectLanguage("1234 !!! ")).toBe("unknown");
  });

  it("computes Jaccard distance, null for two empty sets", () => {
    expect(jaccardDistance(new Set(["a", "b"]), new Set(["b", "c"]))).toBeCloseTo(2 / 3, 12);
    expect(jaccardDistance(new Set(["a"]), new Set())).toBe(1);
    expect(jaccardDistance(new Set(), new Set())).toBeNull();
  });

  it("ranks topics by frequency, ties by first appearance, at most 5", () => {
    expect(extractTopics(["alpha beta gamma", "delta epsilon zeta beta", "gamma"])).toEqual(["beta", "gamma", "alpha", "delta", "epsilon"]);
    // Function bigrams (我們, 可以) and stopwords (the, with) are never topics.
    expect(extractTopics(["我們可以部署嗎", "the deploy with the helm"])).toEqual(["們可", "以部", "部署", "署嗎", "deploy"]);
  });
});
