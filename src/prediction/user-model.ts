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

/** Whether topic `t` of weight `w` ranks before `[u, v]`: heavier, then earlier in code-unit order. */
const ranksBefore = (t: string, w: number, [u, v]: readonly [string, number]) => w > v || (w === v && t < u);

/**
 * The model's k heaviest topics, ties in code-unit order of the keyword (deterministic). One pass
 * keeping the best k, not a sort of the whole distribution: `predict` runs it on every conversation.
 */
export function topTopics(model: Pick<UserModel, "topic_distribution">, k: number): string[] {
  if (k <= 0) return [];
  const top: [string, number][] = [];
  for (const [t, w] of Object.entries(model.topic_distribution)) {
    if (!(Number.isFinite(w) && w > 0)) continue;
    if (top.length === k && !ranksBefore(t, w, top[k - 1]!)) continue;
    let at = top.length;
    while (at > 0 && ranksBefore(t, w, top[at - 1]!)) at--;
    top.splice(at, 0, [t, w]);
    if (top.length > k) top.pop();
  }
  return top.map(([t]) => t);
}

/**
 * The distribution with this conversation's topics counted once more. Over the cap of 64 it drops the
 * weakest, one at a time (at most 5 more than the cap, so no sort of the whole): the lightest; among
 * equal weights a topic of an earlier conversation before one of this conversation; then the later
 * keyword in code-unit order.
 */
function nextTopics(dist: Record<string, number>, topics: readonly string[]): Record<string, number> {
  const current = new Set(topics);
  const merged = new Map(Object.entries(dist));
  for (const t of current) merged.set(t, own(dist, t) + 1);
  for (let overflow = merged.size - MAX_MODEL_TOPICS; overflow > 0; overflow--) {
    let worst: string | null = null;
    let worstW = 0;
    let worstCurrent = false;
    for (const [t, w] of merged) {
      const c = current.has(t);
      if (worst === null || w < worstW || (w === worstW && ((worstCurrent && !c) || (worstCurrent === c && t > worst)))) {
        worst = t;
        worstW = w;
        worstCurrent = c;
      }
    }
    merged.delete(worst!);
  }
  return Object.fromEntries(merged);
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
