import { FEEDBACK_MAX, FEEDBACK_MIN, MAX_TOPICS, SHORT_MESSAGE_CHARS } from "./constants";
import { round9 } from "./num";
import { charLength, detectLanguage, tokenize, type Language } from "./text";

/** One message of a conversation. `at` is an ISO-8601 time. */
export interface Turn {
  role: "user" | "assistant";
  content: string;
  at: string;
}

/** Explicit feedback on a conversation; `strength` is clamped into 0.2–0.4 (seed 003 §3.4, §8). */
export interface Feedback {
  polarity: "positive" | "negative";
  strength: number;
}

/**
 * What one finished conversation shows (seed 003 §3.7), extracted without a model and without I/O.
 * Counts are whole numbers; a figure the conversation cannot show is null, never 0.
 */
export interface ConversationMetrics {
  message_count: number;
  user_message_count: number;
  assistant_message_count: number;
  /** Mean length of the assistant's messages in characters (code points); null with no assistant message. */
  avg_assistant_response_length: number | null;
  /**
   * Follow-ups over a 3-message sliding window: every window of three consecutive messages that reads
   * user → assistant → user, whose last message is short (fewer than 50 characters after trimming) or
   * contains "?" or "？", counts once. Each user message is the last of at most one window, so it
   * counts at most once; the conversation's first user message never counts.
   */
  user_follow_ups: number;
  /** Assistant messages that directly answer a user message (user → assistant): the chances to follow up. */
  follow_up_opportunities: number;
  /** user_follow_ups / follow_up_opportunities, in [0, 1]; null when the assistant never answered. */
  follow_up_rate: number | null;
  /** User messages containing at least one correction pattern (§3.7), each message counted once. */
  user_corrections: number;
  /** user_corrections / user_message_count; null with no user message. */
  correction_rate: number | null;
  /** Language of the user's messages (see `detectLanguage`). */
  detected_language: Language;
  /** At most 5 keywords of the user's messages, most frequent first (see `extractTopics`). */
  extracted_topics: string[];
  /** Signed sum of the feedback strengths, each clamped into 0.2–0.4, the sum into ±0.4; null without feedback. */
  feedback_signal: number | null;
  /** UTC hour (0–23) of the first user message (the first message when there is none); null when its time does not parse. */
  hour_of_day: number | null;
}

/**
 * Correction patterns exactly as seed 003 §3.7 lists them, matched case-insensitively as substrings of
 * a user message. "that's wrong" is also matched with a typographic apostrophe (’), which phones type.
 * Simplified Chinese forms (错了, 不对, 重来) are not in the seed's list and are not matched.
 */
export const CORRECTION_PATTERNS: readonly string[] = [
  "不是",
  "錯了",
  "不對",
  "重來",
  "不要",
  "修改",
  "not what i",
  "that's wrong",
  "that\u2019s wrong",
  "no, ",
  "incorrect",
  "please fix",
  "try again",
];

export function isCorrection(content: string): boolean {
  const lower = content.toLowerCase();
  return CORRECTION_PATTERNS.some((p) => lower.includes(p));
}

export function isFollowUpMessage(content: string): boolean {
  return charLength(content.trim()) < SHORT_MESSAGE_CHARS || content.includes("?") || content.includes("？");
}

/** ASCII words that are never topics (words of 2 characters or fewer are dropped anyway). */
const ASCII_STOPWORDS: ReadonlySet<string> = new Set(
  (
    "the and are was were been being have has had does did will would could should may might can shall " +
    "from into through during its this that these those you she him her them your his hers our ours their " +
    "they but not then else just also what how why when where which who whom with about for out all any " +
    "some get got like want need now here there yes okay please thanks thank let can't don't"
  ).split(" "),
);

/** Frequent function bigrams of Chinese (traditional and simplified) and Japanese that are never topics. */
const CJK_STOP_BIGRAMS: ReadonlySet<string> = new Set(
  (
    "我們 我们 你們 你们 他們 他们 什麼 什么 怎麼 怎么 這個 这个 那個 那个 可以 一下 一個 一个 就是 不是 " +
    "沒有 没有 還是 还是 因為 因为 所以 如果 但是 現在 现在 知道 覺得 觉得 問題 问题"
  ).split(" "),
);

/**
 * The top 5 keywords of the user's messages: ASCII words longer than 2 characters minus a small
 * stopword list, and CJK bigrams (Han/katakana) minus a small list of function bigrams, ranked
 * together by frequency, ties by first appearance. Only user messages: they say what the user wants;
 * the assistant's longer replies would outweigh them.
 */
export function extractTopics(texts: readonly string[], max = MAX_TOPICS): string[] {
  if (max <= 0) return [];
  const counts = new Map<string, number>();
  for (const text of texts) {
    const { ascii, cjk } = tokenize(text);
    for (const w of ascii) if (!ASCII_STOPWORDS.has(w)) counts.set(w, (counts.get(w) ?? 0) + 1);
    for (const b of cjk) if (!CJK_STOP_BIGRAMS.has(b)) counts.set(b, (counts.get(b) ?? 0) + 1);
  }
  // The top `max` by count in one pass; a later keyword displaces an earlier one only with a strictly
  // higher count, so ties keep first appearance (Map iterates in insertion order).
  const top: [string, number][] = [];
  for (const entry of counts) {
    if (top.length === max && entry[1] <= top[max - 1]![1]) continue;
    let at = top.length;
    while (at > 0 && top[at - 1]![1] < entry[1]) at--;
    top.splice(at, 0, entry);
    if (top.length > max) top.pop();
  }
  return top.map(([k]) => k);
}

/**
 * The feedback signal of §3.4: each item's strength clamped into 0.2–0.4 and signed by its polarity,
 * summed and clamped into ±0.4 (two positive items are at most the seed's +0.4; opposite items cancel).
 * An item whose strength is not a finite number is skipped. No usable item: null (no feedback is not
 * neutral feedback).
 */
export function feedbackSignal(feedback: readonly Feedback[] | undefined): number | null {
  let sum = 0;
  let used = 0;
  for (const f of feedback ?? []) {
    if (!Number.isFinite(f.strength)) continue;
    const s = Math.min(FEEDBACK_MAX, Math.max(FEEDBACK_MIN, f.strength));
    sum += f.polarity === "negative" ? -s : s;
    used++;
  }
  if (used === 0) return null;
  return round9(Math.min(FEEDBACK_MAX, Math.max(-FEEDBACK_MAX, sum)));
}

function hourOf(iso: string | undefined): number | null {
  if (iso === undefined) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : new Date(ms).getUTCHours();
}

/** The metrics of one finished conversation (seed 003 §3.7): a pure function of its turns and feedback. */
export function extract(turns: readonly Turn[], feedback?: readonly Feedback[]): ConversationMetrics {
  const userTexts: string[] = [];
  let assistantCount = 0;
  let assistantChars = 0;
  let corrections = 0;
  let followUps = 0;
  let opportunities = 0;
  for (let i = 0; i < turns.length; i++) {
    const t = turns[i]!;
    if (t.role === "user") {
      userTexts.push(t.content);
      if (isCorrection(t.content)) corrections++;
      const prev = turns[i - 1];
      const prev2 = turns[i - 2];
      if (prev?.role === "assistant" && prev2?.role === "user" && isFollowUpMessage(t.content)) followUps++;
    } else {
      assistantCount++;
      assistantChars += charLength(t.content);
      if (turns[i - 1]?.role === "user") opportunities++;
    }
  }
  const firstUser = turns.find((t) => t.role === "user") ?? turns[0];
  return {
    message_count: turns.length,
    user_message_count: userTexts.length,
    assistant_message_count: assistantCount,
    avg_assistant_response_length: assistantCount === 0 ? null : round9(assistantChars / assistantCount),
    user_follow_ups: followUps,
    follow_up_opportunities: opportunities,
    follow_up_rate: opportunities === 0 ? null : round9(followUps / opportunities),
    user_corrections: corrections,
    correction_rate: userTexts.length === 0 ? null : round9(corrections / userTexts.length),
    detected_language: detectLanguage(userTexts.join("\n")),
    extracted_topics: extractTopics(userTexts),
    feedback_signal: feedbackSignal(feedback),
    hour_of_day: hourOf(firstUser?.at),
  };
}
