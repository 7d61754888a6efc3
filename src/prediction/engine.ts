import {
  COLD_START_CONFIDENCE,
  COLD_START_FOLLOW_UP_RATE,
  COLD_START_SATISFACTION,
  CORRECTION_PENALTY,
  EXPECTED_CORRECTIONS_FROM,
  FOLLOW_UP_PENALTY,
  FOLLOW_UP_SURPRISE_MARGIN,
  MAX_TOPICS,
  SATISFACTION_BASELINE,
  WEIGHT_CORRECTION,
  WEIGHT_FOLLOW_UP,
  WEIGHT_SATISFACTION,
  WEIGHT_TOPIC,
} from "./constants";
import type { ConversationMetrics } from "./metrics";
import { clamp01, round9 } from "./num";
import { meanOf } from "./stats";
import { jaccardDistance, tokenize } from "./text";
import { categorize, type AdaptiveThresholds, type ErrorCategory } from "./thresholds";
import { confidenceOf, topTopics, type UserModel } from "./user-model";

/** Seed 003 §3.2, plus the two expectations `calculateError` needs and the seed's struct leaves implicit. */
export interface Prediction {
  expected_satisfaction: number;
  expected_follow_up_rate: number;
  /** The model's heaviest topic; null at cold start (§8: (0.7, 0.3, None, 0.0)). */
  expected_topic: string | null;
  /** 0 at cold start, 1 from 50 conversations on (§3.6). */
  confidence: number;
  timestamp: string;
  /** The model's top 5 topics, heaviest first (`expected_topic` is the first); [] at cold start. Topic surprise compares these. */
  expected_topics: string[];
  /** Mean corrections per user message so far; null when the model has no such observation (cold start). */
  expected_correction_rate: number | null;
}

/**
 * The prediction for a (user, agent) pair before its next conversation (§3.3, §9 ①), zero-LLM.
 * No model, or a model with no conversation: the cold start (0.7, 0.3, null, 0.0). A statistic the
 * model has no observation of yet keeps its cold-start value rather than reading as 0.
 *
 * `firstUserMessage` is accepted for the seed's signature (predict(user, agent, message)) and not used:
 * the message is part of the conversation the prediction is scored against, so predicting from it
 * would make topic surprise measure the message against itself.
 */
export function predict(model: UserModel | null, _firstUserMessage: string, now: Date): Prediction {
  const timestamp = now.toISOString();
  if (model === null || model.total_conversations <= 0) {
    return {
      expected_satisfaction: COLD_START_SATISFACTION,
      expected_follow_up_rate: COLD_START_FOLLOW_UP_RATE,
      expected_topic: null,
      confidence: COLD_START_CONFIDENCE,
      timestamp,
      expected_topics: [],
      expected_correction_rate: null,
    };
  }
  const topics = topTopics(model, MAX_TOPICS);
  const satisfaction = meanOf(model.avg_satisfaction);
  const followUps = meanOf(model.follow_up_rate);
  const corrections = meanOf(model.correction_rate);
  return {
    expected_satisfaction: satisfaction === null ? COLD_START_SATISFACTION : round9(clamp01(satisfaction)),
    expected_follow_up_rate: followUps === null ? COLD_START_FOLLOW_UP_RATE : round9(clamp01(followUps)),
    expected_topic: topics[0] ?? null,
    confidence: confidenceOf(model),
    timestamp,
    expected_topics: topics,
    expected_correction_rate: corrections === null ? null : round9(clamp01(corrections)),
  };
}

/**
 * §3.4: 0.7 − 0.3 × corrections − 0.1 × max(0, follow_ups − 1) + feedback_signal (signed; none: 0),
 * clamped into [0, 1].
 */
export function inferSatisfaction(m: Pick<ConversationMetrics, "user_corrections" | "user_follow_ups" | "feedback_signal">): number {
  const inferred =
    SATISFACTION_BASELINE -
    CORRECTION_PENALTY * m.user_corrections -
    FOLLOW_UP_PENALTY * Math.max(0, m.user_follow_ups - 1) +
    (m.feedback_signal ?? 0);
  return clamp01(round9(inferred));
}

function tokenSets(x: string | readonly string[]): { ascii: Set<string>; cjk: Set<string> } {
  const ascii = new Set<string>();
  const cjk = new Set<string>();
  // Each topic is tokenized on its own, so no bigram spans two topics.
  for (const text of typeof x === "string" ? [x] : x) {
    const t = tokenize(text);
    for (const w of t.ascii) ascii.add(w);
    for (const b of t.cjk) cjk.add(b);
  }
  return { ascii, cjk };
}

/**
 * §3.5 topic surprise in [0, 1]: the larger of the Jaccard distances between the expected and the
 * actual ASCII tokens (longer than 2 characters) and between their CJK character bigrams. A script
 * neither side has tokens in gives no distance; one only one side has gives 1 (a switch of language
 * is a surprise). Each side is a topic, a list of topics (each tokenized on its own) or a text.
 *
 * 0 when there is nothing to compare: no expectation (cold start: no prediction, no surprise) or no
 * token on the actual side (a conversation with no topic is not evidence of a different topic).
 */
export function topicSurprise(expected: string | null | readonly string[], actual: string | null | readonly string[]): number {
  if (expected === null || actual === null) return 0;
  const e = tokenSets(expected);
  const a = tokenSets(actual);
  if (e.ascii.size + e.cjk.size === 0 || a.ascii.size + a.cjk.size === 0) return 0;
  const d = Math.max(jaccardDistance(e.ascii, a.ascii) ?? 0, jaccardDistance(e.cjk, a.cjk) ?? 0);
  return round9(d);
}

/** Seed 003 §3.2, plus the inferred satisfaction the error was measured against. */
export interface PredictionError {
  /** expected − inferred satisfaction (signed; the composite uses its absolute value). */
  delta_satisfaction: number;
  topic_surprise: number;
  unexpected_correction: boolean;
  unexpected_follow_up: boolean;
  /** 0.40 |Δsatisfaction| + 0.20 topic + 0.20 correction + 0.20 follow-up, clamped into [0, 1]. */
  composite_error: number;
  category: ErrorCategory;
  inferred_satisfaction: number;
  prediction: Prediction;
  actual: ConversationMetrics;
}

/**
 * A correction is unexpected when the user corrected at least once while the model expected few:
 * its mean correction rate below 0.5 per user message, or no correction rate yet (cold start, whose
 * 0.7 satisfaction is the no-correction baseline).
 */
export function isUnexpectedCorrection(
  p: Pick<Prediction, "expected_correction_rate">,
  actual: Pick<ConversationMetrics, "user_corrections">,
): boolean {
  if (actual.user_corrections <= 0) return false;
  return p.expected_correction_rate === null || p.expected_correction_rate < EXPECTED_CORRECTIONS_FROM;
}

/**
 * Follow-ups are unexpected when the conversation's follow-up rate exceeds the expected rate by more
 * than 0.25 (`FOLLOW_UP_SURPRISE_MARGIN`). A conversation with no assistant reply has no rate and no
 * surprise.
 */
export function isUnexpectedFollowUp(
  p: Pick<Prediction, "expected_follow_up_rate">,
  actual: Pick<ConversationMetrics, "follow_up_rate">,
): boolean {
  if (actual.follow_up_rate === null) return false;
  return round9(actual.follow_up_rate - p.expected_follow_up_rate) > FOLLOW_UP_SURPRISE_MARGIN;
}

/** §3.5: the error of a prediction against the finished conversation, classified by the current thresholds. */
export function calculateError(p: Prediction, actual: ConversationMetrics, thresholds: AdaptiveThresholds): PredictionError {
  const inferred = inferSatisfaction(actual);
  const delta = round9(p.expected_satisfaction - inferred);
  const expectedTopics = p.expected_topics !== undefined && p.expected_topics.length > 0 ? p.expected_topics : p.expected_topic;
  const surprise = topicSurprise(expectedTopics, actual.extracted_topics);
  const unexpectedCorrection = isUnexpectedCorrection(p, actual);
  const unexpectedFollowUp = isUnexpectedFollowUp(p, actual);
  const composite = clamp01(
    round9(
      WEIGHT_SATISFACTION * Math.abs(delta) +
        WEIGHT_TOPIC * surprise +
        WEIGHT_CORRECTION * (unexpectedCorrection ? 1 : 0) +
        WEIGHT_FOLLOW_UP * (unexpectedFollowUp ? 1 : 0),
    ),
  );
  return {
    delta_satisfaction: delta,
    topic_surprise: surprise,
    unexpected_correction: unexpectedCorrection,
    unexpected_follow_up: unexpectedFollowUp,
    composite_error: composite,
    category: categorize(composite, thresholds),
    inferred_satisfaction: inferred,
    prediction: p,
    actual,
  };
}
