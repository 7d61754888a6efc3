import {
  calculateError,
  DEFAULT_THRESHOLDS,
  extract,
  predict,
  type ConversationMetrics,
  type ErrorCategory,
  type PredictionError,
  type Turn,
} from "../../../src/prediction";

export const NOW = new Date("2026-03-01T12:00:00.000Z");

/** Turns alternating from `role`, one minute apart from 09:15 UTC on 2026-03-01. */
export function conversation(contents: readonly string[], first: Turn["role"] = "user"): Turn[] {
  return contents.map((content, i) => ({
    role: (i % 2 === 0) === (first === "user") ? "user" : "assistant",
    content,
    at: new Date(Date.parse("2026-03-01T09:15:00.000Z") + i * 60_000).toISOString(),
  }));
}

/** A Chinese (traditional) conversation: one correction (不對), two follow-ups, three replies. */
export const ZH = conversation([
  "請幫我部署這個服務到生產環境",
  "好的，已經部署完成。",
  "不對，部署到錯的環境了",
  "抱歉，我重新部署。",
  "生產環境的網址是什麼？",
  "網址是 https://example.com",
]);

/** An English conversation: one correction (three patterns in one message), one follow-up, three replies. */
export const EN = conversation([
  "How do I configure the deploy pipeline for staging?",
  "Edit deploy.yaml and set the staging target.",
  "No, that's wrong. The pipeline uses terraform, please fix the staging config.",
  "Sorry. Here is the terraform configuration for the staging environment.",
  "Thanks!",
  "You're welcome.",
]);

/** A Japanese conversation: kana, no pattern of the seed's list, one follow-up, two replies. */
export const JA = conversation([
  "サーバーのデプロイ手順を教えてください",
  "まずビルドを実行します。",
  "違います、もう一度お願いします",
  "失礼しました。デプロイ手順は以下の通りです。",
]);

/** A real error of the given category and composite (the rest from a cold-start English conversation). */
export function errorOf(category: ErrorCategory, composite = 0.5): PredictionError {
  const e = calculateError(predict(null, "", NOW), extract(EN), DEFAULT_THRESHOLDS);
  return { ...e, category, composite_error: composite };
}

export function metrics(overrides: Partial<ConversationMetrics> = {}): ConversationMetrics {
  return { ...extract(EN), ...overrides };
}

/** mulberry32: a small seeded PRNG, so random tests repeat exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
