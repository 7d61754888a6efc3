// The prediction engine of seed 003 §3 (issue 21): pure, zero-LLM, no I/O. Persistence, the
// conversations feature and the router's side effects build on these functions.
export * from "./constants";
export { calculateError, inferSatisfaction, isUnexpectedCorrection, isUnexpectedFollowUp, predict, topicSurprise } from "./engine";
export type { Prediction, PredictionError } from "./engine";
export { CORRECTION_PATTERNS, extract, extractTopics, feedbackSignal, isCorrection, isFollowUpMessage } from "./metrics";
export type { ConversationMetrics, Feedback, Turn } from "./metrics";
export { calibrate, newMetaCognition, metaStats, observe } from "./metacognition";
export type { CalibrationResult, CalibrationRule, MetaCognitionState, MetaCognitionStats, WindowEntry } from "./metacognition";
export { episodicContent, reflectionContext, route } from "./router";
export type { EvolutionAction, RouteResult } from "./router";
export { EMPTY_STATS, meanOf, pushStat, variance } from "./stats";
export type { RunningStats } from "./stats";
export { charLength, detectLanguage, jaccardDistance, tokenize } from "./text";
export type { Language, Tokens } from "./text";
export {
  categorize,
  DEFAULT_THRESHOLDS,
  ERROR_CATEGORIES,
  isSignificantOrWorse,
  normalizeThresholds,
  THRESHOLD_BOUNDS,
} from "./thresholds";
export type { AdaptiveThresholds, ErrorCategory } from "./thresholds";
export { confidenceOf, emptyUserModel, topTopics, updateModel } from "./user-model";
export type { UserModel } from "./user-model";
