import { describe, expect, it } from "vitest";
import {
  calibrate,
  DEFAULT_THRESHOLDS,
  metaStats,
  newMetaCognition,
  normalizeThresholds,
  observe,
  type AdaptiveThresholds,
  type MetaCognitionState,
  type WindowEntry,
} from "../../../src/prediction";
import { errorOf } from "./helpers";

const entry = (over: Partial<WindowEntry> = {}): WindowEntry => ({ significant_or_worse: false, critical: false, improved: null, ...over });

/** A state due for calibration whose window holds `improved` outcomes, `criticals` critical errors, padded to 50. */
function due(opts: { improved?: number; notImproved?: number; criticals?: number; thresholds?: AdaptiveThresholds }): MetaCognitionState {
  const window = [
    ...Array.from({ length: opts.improved ?? 0 }, () => entry({ improved: true })),
    ...Array.from({ length: opts.notImproved ?? 0 }, () => entry({ improved: false })),
    ...Array.from({ length: opts.criticals ?? 0 }, () => entry({ significant_or_worse: true, critical: true })),
  ];
  while (window.length < 50) window.push(entry());
  return { ...newMetaCognition(opts.thresholds), predictions_since_calibration: 100, total_predictions: 100, window };
}

describe("observe", () => {
  it("records whether the trigger before this prediction helped: strictly lower error than a significant-or-worse one", () => {
    const s0 = newMetaCognition();
    const last = (s: MetaCognitionState) => s.window.at(-1);
    expect(last(observe(s0, errorOf("moderate", 0.3)))).toEqual({ significant_or_worse: false, critical: false, improved: null });
    expect(last(observe(s0, errorOf("moderate", 0.3), errorOf("significant", 0.6)))?.improved).toBe(true);
    expect(last(observe(s0, errorOf("critical", 0.9), errorOf("critical", 0.85)))).toEqual({
      significant_or_worse: true,
      critical: true,
      improved: false,
    });
    expect(last(observe(s0, errorOf("significant", 0.6), errorOf("significant", 0.6)))?.improved).toBe(false);
    // The previous prediction triggered nothing: no outcome to learn.
    expect(last(observe(s0, errorOf("negligible", 0.1), errorOf("moderate", 0.4)))?.improved).toBeNull();
    expect(last(observe(s0, errorOf("negligible", 0.1), null))?.improved).toBeNull();
  });

  it("keeps the last 50 predictions and counts every one", () => {
    let s = newMetaCognition();
    for (let i = 0; i < 60; i++) s = observe(s, errorOf(i < 10 ? "critical" : "negligible", i < 10 ? 0.9 : 0.1));
    expect(s.window).toHaveLength(50);
    expect(s.window.every((e) => !e.critical)).toBe(true); // the ten critical ones slid out
    expect(s.predictions_since_calibration).toBe(60);
    expect(s.total_predictions).toBe(60);
  });
});

describe("metaStats", () => {
  it("computes the improvement rate over known outcomes and the critical share over the window", () => {
    expect(metaStats(due({ improved: 3, notImproved: 1, criticals: 11 }))).toEqual({
      sig_improvement_rate: 0.75,
      samples: 4,
      critical_proportion: 0.22,
      window_size: 50,
    });
    expect(metaStats(newMetaCognition())).toEqual({ sig_improvement_rate: null, samples: 0, critical_proportion: null, window_size: 0 });
  });
});

describe("calibrate (§3.9)", () => {
  it("raises moderate_upper by 0.05 when fewer than 30% of at least 5 triggers helped", () => {
    const r = calibrate(due({ improved: 1, notImproved: 4 }));
    expect(r.evaluated).toBe(true);
    expect(r.rules).toEqual(["raise_moderate_sig_ineffective"]);
    expect(r.state.thresholds).toEqual({ negligible_upper: 0.2, moderate_upper: 0.55, significant_upper: 0.8 });
    expect(r.changed).toEqual({ before: DEFAULT_THRESHOLDS, after: r.state.thresholds, rules: ["raise_moderate_sig_ineffective"] });
    expect(r.state.predictions_since_calibration).toBe(0);
    expect(r.state.calibrations).toBe(1);
  });

  it("lowers moderate_upper by 0.03 when more than 70% of at least 5 triggers helped", () => {
    const r = calibrate(due({ improved: 4, notImproved: 1 }));
    expect(r.rules).toEqual(["lower_moderate_sig_effective"]);
    expect(r.state.thresholds.moderate_upper).toBe(0.47);
  });

  it("needs 5 known outcomes, and a rate strictly outside 30%–70%", () => {
    expect(calibrate(due({ notImproved: 4 })).changed).toBeNull();
    expect(calibrate(due({ improved: 4 })).changed).toBeNull();
    expect(calibrate(due({ improved: 3, notImproved: 7 })).changed).toBeNull(); // exactly 30%
    expect(calibrate(due({ improved: 7, notImproved: 3 })).changed).toBeNull(); // exactly 70%
    expect(calibrate(due({ improved: 2, notImproved: 8 })).state.thresholds.moderate_upper).toBe(0.55);
    // Unknown outcomes (improved null) are not failures: 45 triggers pending and 5 helped is 100%.
    expect(calibrate(due({ improved: 5 })).state.thresholds.moderate_upper).toBe(0.47);
  });

  it("lowers significant_upper by 0.05 when more than 20% of the window was critical", () => {
    const r = calibrate(due({ criticals: 11 }));
    expect(r.rules).toEqual(["lower_significant_critical_share"]);
    expect(r.state.thresholds).toEqual({ negligible_upper: 0.2, moderate_upper: 0.5, significant_upper: 0.75 });
    expect(calibrate(due({ criticals: 10 })).changed).toBeNull(); // exactly 20%
  });

  it("applies rules together", () => {
    const r = calibrate(due({ improved: 1, notImproved: 9, criticals: 20 }));
    expect(r.rules).toEqual(["raise_moderate_sig_ineffective", "lower_significant_critical_share"]);
    expect(r.state.thresholds).toEqual({ negligible_upper: 0.2, moderate_upper: 0.55, significant_upper: 0.75 });
  });

  it("keeps every threshold within its bounds", () => {
    const top = calibrate(due({ notImproved: 5, thresholds: { negligible_upper: 0.2, moderate_upper: 0.85, significant_upper: 0.95 } }));
    expect(top.rules).toEqual(["raise_moderate_sig_ineffective", "thresholds_normalized"]);
    expect(top.state.thresholds.moderate_upper).toBe(0.85);
    expect(top.changed).toBeNull();
    const bottom = calibrate(due({ improved: 5, thresholds: { negligible_upper: 0.1, moderate_upper: 0.2, significant_upper: 0.8 } }));
    expect(bottom.state.thresholds.moderate_upper).toBe(0.2);
    const floor = calibrate(due({ criticals: 30, thresholds: { negligible_upper: 0.1, moderate_upper: 0.3, significant_upper: 0.4 } }));
    expect(floor.state.thresholds.significant_upper).toBe(0.4);
  });

  it("forces negligible < moderate < significant, moving the lower threshold 0.05 below the higher", () => {
    const r = calibrate(due({ criticals: 11, thresholds: { negligible_upper: 0.4, moderate_upper: 0.85, significant_upper: 0.45 } }));
    expect(r.state.thresholds).toEqual({ negligible_upper: 0.3, moderate_upper: 0.35, significant_upper: 0.4 });
    expect(r.rules).toEqual(["lower_significant_critical_share", "thresholds_normalized"]);
    // Moderate moved first, then negligible against the moved moderate.
    expect(normalizeThresholds({ negligible_upper: 0.4, moderate_upper: 0.45, significant_upper: 0.45 })).toEqual({
      negligible_upper: 0.35,
      moderate_upper: 0.4,
      significant_upper: 0.45,
    });
    expect(normalizeThresholds({ negligible_upper: 0.5, moderate_upper: 0.6, significant_upper: 0.9 })).toEqual({
      negligible_upper: 0.4,
      moderate_upper: 0.6,
      significant_upper: 0.9,
    });
    expect(normalizeThresholds({ negligible_upper: 0.05, moderate_upper: 2, significant_upper: Number.NaN })).toEqual({
      negligible_upper: 0.1,
      moderate_upper: 0.75,
      significant_upper: 0.8,
    });
  });

  it("evaluates only every 100 predictions", () => {
    let s = newMetaCognition();
    const history: { at: number; significant_upper: number; evaluated: boolean }[] = [];
    // Every prediction critical: the critical rule holds at every evaluation.
    for (let i = 1; i <= 250; i++) {
      s = observe(s, errorOf("critical", 0.9));
      const r = calibrate(s);
      if (!r.evaluated) expect(r.state).toBe(s);
      s = r.state;
      history.push({ at: i, significant_upper: s.thresholds.significant_upper, evaluated: r.evaluated });
    }
    expect(history.filter((h) => h.evaluated).map((h) => h.at)).toEqual([100, 200]);
    expect(history[98]!.significant_upper).toBe(0.8);
    expect(history[99]!.significant_upper).toBe(0.75);
    expect(history[198]!.significant_upper).toBe(0.75);
    expect(history[199]!.significant_upper).toBe(0.7);
    expect(history[249]!.significant_upper).toBe(0.7);
    expect(s.predictions_since_calibration).toBe(50);
    expect(s.calibrations).toBe(2);
  });
});
