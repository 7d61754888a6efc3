import { CONFIDENCE_MATURITY, MAX_MODEL_TOPICS } from "./constants";
import type { ConversationMetrics } from "./metrics";
import { clamp01 } from "./num";
import { EMPTY_STATS, pushStat, type RunningStats } from "./stats";

/**
 * What the engine knows of one (user, agent) pair (seed 003 §3.6), plain JSON. The caller keys it by
 * the pair and stores it; this module only computes the next one.
 */
export interface UserModel {
  /** Mean assistant reply length (characters) per conversation. */
  preferred_response_length: RunningStats;
  /** Inferred satisfaction (§3.4) per conversation. */
  avg_satisfaction: RunningStats;
  /** Keyword → number of conversations whose extracted topics included it; the 64 heaviest are kept. */
  topic_distribution: Record<string, number>;
  /** 24 counters: conversations started in each UTC hour. */
  active_hours: number[];
  /** Per conversation: corrections / user messages. */
  correction_rate: RunningStats;
  /** Per conversation: follow-ups / assistant replies (see ConversationMetrics.follow_up_rate). */
  follow_up_rate: RunningStats;
  /** Detected language → number of conversations ("unknown" is not counted). */
  language_preference: Record<string, number>;
  total_conversations: number;
  updated_at: string;
}

export function emptyUserModel(now: Date): UserModel {
  return {
    preferred_response_length: EMPTY_STATS,
    avg_satisfaction: EMPTY_STATS,
    topic_distribution: {},
    active_hours: Array.from({ length: 24 }, () => 0),
    correction_rate: EMPTY_STATS,
    follow_up_rate: EMPTY_STATS,
    language_preference: {},
    total_conversations: 0,
    updated_at: now.toISOString(),
  };
}

/** §3.6: min(total_conversations, 50) / 50; a pair with no model has confidence 0. */
export function confidenceOf(model: Pick<UserModel, "total_conversations"> | null): number {
  if (model === null) return 0;
  return Math.min(Math.max(0, model.total_conversations), CONFIDENCE_MATURITY) / CONFIDENCE_MATURITY;
}

/**
 * Own entries only: a topic named "constructor" must not read Object.prototype's. Records are built
 * with Object.fromEntries, which defines own properties even for a key like "__proto__".
 */
function own(record: Record<string, number>, key: string): number {
  return Object.hasOwn(record, key) ? (record[key] ?? 0) : 0;
}

/** The model's topics, heaviest first, ties in code-unit order of the keyword (deterministic). */
export function topTopics(model: Pick<UserModel, "topic_distribution">, k: number): string[] {
  return Object.entries(model.topic_distribution)
    .filter(([, w]) => Number.isFinite(w) && w > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, k)
    .map(([t]) => t);
}

function nextTopics(dist: Record<string, number>, topics: readonly string[]): Record<string, number> {
  const current = new Set(topics);
  const merged = new Map(Object.entries(dist));
  for (const t of current) merged.set(t, own(dist, t) + 1);
  if (merged.size <= MAX_MODEL_TOPICS) return Object.fromEntries(merged);
  // Over the cap: keep the heaviest; among equal weights this conversation's topics, then code-unit order.
  const kept = [...merged.entries()]
    .sort((a, b) => b[1] - a[1] || Number(current.has(b[0])) - Number(current.has(a[0])) || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, MAX_MODEL_TOPICS);
  return Object.fromEntries(kept);
}

/**
 * The model after one more conversation (§3.6, §9 ④): every statistic the conversation measured is
 * pushed; one it could not measure (no assistant reply, no user message, an unparsable time, an
 * unknown language) is left as it was rather than pushed as 0. The conversation always counts in
 * `total_conversations`, which drives confidence.
 */
export function updateModel(model: UserModel | null, metrics: ConversationMetrics, inferredSatisfaction: number, now: Date): UserModel {
  const m = model ?? emptyUserModel(now);
  const hours = m.active_hours.length === 24 ? [...m.active_hours] : Array.from({ length: 24 }, (_, i) => m.active_hours[i] ?? 0);
  const hour = metrics.hour_of_day;
  if (hour !== null && Number.isInteger(hour) && hour >= 0 && hour < 24) hours[hour] = (hours[hour] ?? 0) + 1;
  const lang = metrics.detected_language;
  return {
    preferred_response_length:
      metrics.avg_assistant_response_length === null
        ? m.preferred_response_length
        : pushStat(m.preferred_response_length, metrics.avg_assistant_response_length),
    avg_satisfaction: pushStat(m.avg_satisfaction, clamp01(inferredSatisfaction)),
    topic_distribution: nextTopics(m.topic_distribution, metrics.extracted_topics),
    active_hours: hours,
    correction_rate: metrics.correction_rate === null ? m.correction_rate : pushStat(m.correction_rate, metrics.correction_rate),
    follow_up_rate: metrics.follow_up_rate === null ? m.follow_up_rate : pushStat(m.follow_up_rate, metrics.follow_up_rate),
    language_preference:
      lang === "unknown"
        ? m.language_preference
        : Object.fromEntries([...Object.entries(m.language_preference), [lang, own(m.language_preference, lang) + 1]]),
    total_conversations: m.total_conversations + 1,
    updated_at: now.toISOString(),
  };
}
