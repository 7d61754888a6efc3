import { describe, expect, it } from "vitest";
import { judgeObservation } from "../../../src/topology/observation";

const RULE = { min_samples: 5, observe_hours: 24 };
const UNTIL = "2026-12-02T00:00:00.000Z";
const during = new Date("2026-12-01T12:00:00.000Z");
const after = new Date(UNTIL);
const o = (extensions = 0) => ({ baselineRejectRate: 0.6, observeUntil: UNTIL, extensions });

describe("judgeObservation", () => {
  it("keeps observing while the window is open and the to_agent does better or has no samples", () => {
    expect(judgeObservation(o(), { samples: 0, rejects: 0 }, RULE, during)).toEqual({ verdict: "keep" });
    expect(judgeObservation(o(), { samples: 3, rejects: 1 }, RULE, during)).toEqual({ verdict: "keep" });
  });

  it("rolls back at once when the to_agent's rate reaches the baseline, even with one sample", () => {
    expect(judgeObservation(o(), { samples: 1, rejects: 1 }, RULE, during)).toEqual({ verdict: "rolled_back", reason: "not_better" });
    expect(judgeObservation(o(), { samples: 5, rejects: 3 }, RULE, during)).toEqual({ verdict: "rolled_back", reason: "not_better" });
  });

  it("confirms at the window's end with enough samples and a lower rate", () => {
    expect(judgeObservation(o(), { samples: 5, rejects: 2 }, RULE, after)).toEqual({ verdict: "confirmed" });
  });

  it("extends once by observe_hours when samples are short, then rolls back if still short", () => {
    expect(judgeObservation(o(0), { samples: 4, rejects: 0 }, RULE, after)).toEqual({
      verdict: "extended",
      observeUntil: "2026-12-03T00:00:00.000Z",
    });
    expect(judgeObservation(o(1), { samples: 4, rejects: 0 }, RULE, after)).toEqual({
      verdict: "rolled_back",
      reason: "insufficient_samples",
    });
    expect(judgeObservation(o(1), { samples: 5, rejects: 0 }, RULE, after)).toEqual({ verdict: "confirmed" });
  });
});
