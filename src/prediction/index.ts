// The prediction engine of seed 003 §3 (issue 21): pure, zero-LLM, no I/O. Persistence, the
// conversations feature and the router's side effects build on these functions.
export * from "./constants";
export { calculateError, inferSatisfaction, predict, topicSurprise } from "./engine";
export type { Prediction, PredictionError } from "./engine";
export { extract, extractTopics, feedbackSignal, isCorrection } from "./metrics";
export type { ConversationMetrics, Feedback, Turn } from "./metrics";
export { calibrate, newMetaCognition, metaStats, observe } from "./metacognition";
export type { MetaCognitionState, WindowEntry } from "./metacognition";
export { route } from "./router";
export type { EvolutionAction } from "./router";
export { EMPTY_STATS, meanOf, pushStat, variance } from "./stats";
export type { RunningStats } from "./stats";
export { charLength, detectLanguage, jaccardDistance, tokenize } from "./text";
export { categorize, DEFAULT_THRESHOLDS, normalizeThresholds } from "./thresholds";
export type { AdaptiveThresholds, ErrorCategory } from "./thresholds";
export { confidenceOf, emptyUserModel, updateModel } from "./user-model";
export type { UserModel } from "./user-model";
