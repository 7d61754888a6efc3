/**
 * Every number of the prediction engine, from seed 003 §3 and the table in §8 ("予測エンジン"). The
 * seed's numbers are requirements; the ones marked "crewplane" are choices where the seed is silent,
 * each explained where it is used.
 */

// §3.4 satisfaction inference.
export const SATISFACTION_BASELINE = 0.7;
export const CORRECTION_PENALTY = 0.3;
export const FOLLOW_UP_PENALTY = 0.1;
/** Explicit feedback moves satisfaction by 0.2–0.4 either way (§8 "フィードバックボーナス ±0.2〜0.4"). */
export const FEEDBACK_MIN = 0.2;
export const FEEDBACK_MAX = 0.4;

// §3.5 composite error weights: satisfaction / topic / correction / follow-up (§8 "40/20/20/20").
export const WEIGHT_SATISFACTION = 0.4;
export const WEIGHT_TOPIC = 0.2;
export const WEIGHT_CORRECTION = 0.2;
export const WEIGHT_FOLLOW_UP = 0.2;

// §3.2 / §8 cold-start prediction (0.7, 0.3, None, 0.0).
export const COLD_START_SATISFACTION = 0.7;
export const COLD_START_FOLLOW_UP_RATE = 0.3;
export const COLD_START_CONFIDENCE = 0;

/** §3.6 / §8: confidence = min(n, 50) / 50. */
export const CONFIDENCE_MATURITY = 50;

// §3.7 metrics extraction.
export const MAX_TOPICS = 5;
/** A user message shorter than this many characters (Unicode code points) is a follow-up (§3.7 "50文字未満"). */
export const SHORT_MESSAGE_CHARS = 50;

/** §3.8 / §8: this many consecutive significant-or-worse errors escalate to emergency evolution. */
export const CONSECUTIVE_ESCALATION = 3;
/** §3.3: the consecutive significant counter is capped at 10. */
export const CONSECUTIVE_CAP = 10;

// §3.9 / §8 metacognition.
export const CALIBRATION_INTERVAL = 100;
export const METACOGNITION_WINDOW = 50;
export const MIN_IMPROVEMENT_SAMPLES = 5;
export const SIG_INEFFECTIVE_BELOW = 0.3;
export const SIG_EFFECTIVE_ABOVE = 0.7;
export const CRITICAL_SHARE_ABOVE = 0.2;
export const RAISE_MODERATE_BY = 0.05;
export const LOWER_MODERATE_BY = 0.03;
export const LOWER_SIGNIFICANT_BY = 0.05;

// crewplane choices (the seed is silent).
/**
 * `unexpected_follow_up` holds when the conversation's follow-up rate exceeds the expected rate by more
 * than this: a quarter of the replies. At the cold-start expectation (0.3) one follow-up in two replies
 * (0.5) is within it, two in three (0.67) are not.
 */
export const FOLLOW_UP_SURPRISE_MARGIN = 0.25;
/** `unexpected_correction` holds unless the model expects corrections in at least half the user's messages. */
export const EXPECTED_CORRECTIONS_FROM = 0.5;
/** Gap kept between thresholds when calibration forces negligible < moderate < significant. */
export const THRESHOLD_ORDER_GAP = 0.05;
/** How many topics a user model keeps (the heaviest); bounds the stored JSON. */
export const MAX_MODEL_TOPICS = 64;
