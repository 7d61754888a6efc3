import {
  CALIBRATION_INTERVAL,
  CRITICAL_SHARE_ABOVE,
  LOWER_MODERATE_BY,
  LOWER_SIGNIFICANT_BY,
  METACOGNITION_WINDOW,
  MIN_IMPROVEMENT_SAMPLES,
  RAISE_MODERATE_BY,
  SIG_EFFECTIVE_ABOVE,
  SIG_INEFFECTIVE_BELOW,
} from "./constants";
import type { PredictionError } from "./engine";
import { round9 } from "./num";
import { DEFAULT_THRESHOLDS, isSignificantOrWorse, normalizeThresholds, sameThresholds, type AdaptiveThresholds } from "./thresholds";

/** One prediction in the metacognition window. */
export interface WindowEntry {
  /** This prediction's error was significant or critical (so the router triggered reflection or evolution). */
  significant_or_worse: boolean;
  critical: boolean;
  /**
   * What this prediction revealed about the trigger before it: when the same (user, agent)'s previous
   * prediction was significant-or-worse, whether this error is lower than that one ("the trigger
   * helped"); null when the previous prediction triggered nothing or there was none. An outcome is
   * recorded with the prediction that reveals it, so a trigger whose next conversation has not
   * happened yet is in no entry: unknown is not counted as a failure.
   */
  improved: boolean | null;
}

/** The engine's self-calibration state (seed 003 §3.9); one per agent, or one per deployment, as the caller keeps it. */
export interface MetaCognitionState {
  thresholds: AdaptiveThresholds;
  predictions_since_calibration: number;
  total_predictions: number;
  calibrations: number;
  /** The last 50 predictions, oldest first. */
  window: WindowEntry[];
}

export function newMetaCognition(thresholds: AdaptiveThresholds = DEFAULT_THRESHOLDS): MetaCognitionState {
  return { thresholds: { ...thresholds }, predictions_since_calibration: 0, total_predictions: 0, calibrations: 0, window: [] };
}

/**
 * Records one prediction. `previousError` is the same (user, agent) pair's previous prediction error,
 * if any; when it was significant-or-worse, this error settles whether the trigger it caused helped:
 * improved = this composite error is strictly lower. A regression toward the mean favours "improved";
 * the seed's 30% / 70% bands are what absorb it. Only `category` and `composite_error` are read, so a
 * stored error without its prediction and metrics will do.
 */
export function observe(
  state: MetaCognitionState,
  error: Pick<PredictionError, "category" | "composite_error">,
  previousError?: Pick<PredictionError, "category" | "composite_error"> | null,
): MetaCognitionState {
  const improved =
    previousError && isSignificantOrWorse(previousError.category) ? error.composite_error < previousError.composite_error : null;
  const entry: WindowEntry = {
    significant_or_worse: isSignificantOrWorse(error.category),
    critical: error.category === "critical",
    improved,
  };
  return {
    ...state,
    predictions_since_calibration: state.predictions_since_calibration + 1,
    total_predictions: state.total_predictions + 1,
    window: [...state.window, entry].slice(-METACOGNITION_WINDOW),
  };
}

export interface MetaCognitionStats {
  /**
   * sig_improvement_rate = recent_positive / recent_total over the window: among the trigger outcomes
   * the window's predictions revealed (entries with `improved` not null), the share that improved.
   * null when there is none.
   */
  sig_improvement_rate: number | null;
  /** recent_total: how many outcomes are known. */
  samples: number;
  /** Share of critical errors among the window's predictions; null for an empty window. */
  critical_proportion: number | null;
  window_size: number;
}

export function metaStats(state: Pick<MetaCognitionState, "window">): MetaCognitionStats {
  const w = state.window.slice(-METACOGNITION_WINDOW);
  let samples = 0;
  let positive = 0;
  let critical = 0;
  for (const e of w) {
    if (e.critical) critical++;
    if (e.improved === null) continue;
    samples++;
    if (e.improved) positive++;
  }
  return {
    sig_improvement_rate: samples === 0 ? null : round9(positive / samples),
    samples,
    critical_proportion: w.length === 0 ? null : round9(critical / w.length),
    window_size: w.length,
  };
}

/** Stable tokens naming what a calibration did. */
export type CalibrationRule =
  "raise_moderate_sig_ineffective" | "lower_moderate_sig_effective" | "lower_significant_critical_share" | "thresholds_normalized";

export interface CalibrationResult {
  state: MetaCognitionState;
  /** Whether this call evaluated (100 predictions since the last evaluation); false leaves the state as it was. */
  evaluated: boolean;
  /** The rules that fired, even where a bound kept the threshold where it was. */
  rules: CalibrationRule[];
  stats: MetaCognitionStats;
  /** Set when the thresholds moved. */
  changed: null | { before: AdaptiveThresholds; after: AdaptiveThresholds; rules: CalibrationRule[] };
}

/**
 * §3.9, once every 100 predictions (call it after every `observe`; before the 100th it does nothing):
 *   improvement rate < 30% with ≥ 5 samples → moderate_upper += 0.05 (triggers that do not help: fewer)
 *   improvement rate > 70% with ≥ 5 samples → moderate_upper −= 0.03 (triggers that help: more)
 *   critical share of the window > 20%      → significant_upper −= 0.05
 * then bounds and the forced order negligible < moderate < significant (`normalizeThresholds`;
 * "thresholds_normalized" when that changed anything beyond the rules' own steps). The counter
 * restarts; the window carries on.
 */
export function calibrate(state: MetaCognitionState): CalibrationResult {
  const stats = metaStats(state);
  if (state.predictions_since_calibration < CALIBRATION_INTERVAL) return { state, evaluated: false, rules: [], stats, changed: null };
  const before = { ...state.thresholds };
  const next = { ...before };
  const rules: CalibrationRule[] = [];
  const rate = stats.sig_improvement_rate;
  if (rate !== null && stats.samples >= MIN_IMPROVEMENT_SAMPLES && rate < SIG_INEFFECTIVE_BELOW) {
    next.moderate_upper += RAISE_MODERATE_BY;
    rules.push("raise_moderate_sig_ineffective");
  }
  if (rate !== null && stats.samples >= MIN_IMPROVEMENT_SAMPLES && rate > SIG_EFFECTIVE_ABOVE) {
    next.moderate_upper -= LOWER_MODERATE_BY;
    rules.push("lower_moderate_sig_effective");
  }
  if (stats.critical_proportion !== null && stats.critical_proportion > CRITICAL_SHARE_ABOVE) {
    next.significant_upper -= LOWER_SIGNIFICANT_BY;
    rules.push("lower_significant_critical_share");
  }
  const stepped = {
    negligible_upper: round9(next.negligible_upper),
    moderate_upper: round9(next.moderate_upper),
    significant_upper: round9(next.significant_upper),
  };
  const after = normalizeThresholds(stepped);
  if (!sameThresholds(after, stepped)) rules.push("thresholds_normalized");
  return {
    state: { ...state, thresholds: after, predictions_since_calibration: 0, calibrations: state.calibrations + 1 },
    evaluated: true,
    rules,
    stats,
    changed: sameThresholds(before, after) ? null : { before, after, rules },
  };
}
