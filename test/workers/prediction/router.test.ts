import { describe, expect, it } from "vitest";
import { route, type EvolutionAction } from "../../../src/prediction";
import { errorOf } from "./helpers";

const kind = (a: EvolutionAction) => (a.kind === "trigger_emergency_evolution" ? `emergency:${a.reason}` : a.kind);

describe("route (§3.8)", () => {
  it("does nothing on a negligible error and resets the counter", () => {
    expect(route(errorOf("negligible", 0.1), 2)).toEqual({ action: { kind: "none" }, consecutive_significant: 0 });
  });

  it("stores a moderate error as episodic memory, its importance the composite error, and resets the counter", () => {
    const r = route(errorOf("moderate", 0.32), 2);
    expect(r.consecutive_significant).toBe(0);
    expect(r.action.kind).toBe("store_episodic");
    if (r.action.kind !== "store_episodic") return;
    expect(r.action.importance).toBe(0.32);
    expect(r.action.content).toContain("moderate, error 0.320");
    expect(r.action.content).toContain("topics: pipeline, staging, configure, deploy, wrong");
  });

  it("triggers reflection on a first and second significant error", () => {
    const first = route(errorOf("significant", 0.6), 0);
    expect(first.action.kind).toBe("trigger_reflection");
    expect(first.consecutive_significant).toBe(1);
    const second = route(errorOf("significant", 0.6), 1);
    expect(second.action.kind).toBe("trigger_reflection");
    expect(second.consecutive_significant).toBe(2);
    if (second.action.kind === "trigger_reflection") {
      expect(second.action.context).toContain("composite error: 0.600 (significant); consecutive significant-or-worse: 2");
      expect(second.action.context).toContain("unexpected correction");
    }
  });

  it("escalates the third significant error in a row to emergency evolution", () => {
    const r = route(errorOf("significant", 0.6), 2);
    expect(r.consecutive_significant).toBe(3);
    expect(kind(r.action)).toBe("emergency:consecutive_significant");
  });

  it("sends a critical error straight to emergency evolution, counting it in the run", () => {
    expect(kind(route(errorOf("critical", 0.9), 0).action)).toBe("emergency:critical");
    expect(route(errorOf("critical", 0.9), 0).consecutive_significant).toBe(1);
    // A critical error that is also the third in a row is reported as critical.
    expect(kind(route(errorOf("critical", 0.9), 2).action)).toBe("emergency:critical");
    // Critical errors count toward the run of significant-or-worse.
    expect(kind(route(errorOf("significant", 0.6), route(errorOf("critical", 0.9), 1).consecutive_significant).action)).toBe(
      "emergency:consecutive_significant",
    );
  });

  it("caps the counter at 10 and keeps escalating while the run lasts", () => {
    let count = 0;
    const seen: string[] = [];
    const counts: number[] = [];
    for (let i = 0; i < 14; i++) {
      const r = route(errorOf("significant", 0.6), count);
      count = r.consecutive_significant;
      counts.push(count);
      seen.push(kind(r.action));
    }
    expect(counts).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 10]);
    expect(seen.slice(0, 3)).toEqual(["trigger_reflection", "trigger_reflection", "emergency:consecutive_significant"]);
    expect(new Set(seen.slice(2))).toEqual(new Set(["emergency:consecutive_significant"]));
  });

  it("starts over after a lower error: the next significant error is a reflection again", () => {
    let count = route(errorOf("significant"), route(errorOf("significant"), 0).consecutive_significant).consecutive_significant;
    expect(count).toBe(2);
    count = route(errorOf("moderate", 0.3), count).consecutive_significant;
    expect(count).toBe(0);
    const r = route(errorOf("significant"), count);
    expect(r).toMatchObject({ consecutive_significant: 1, action: { kind: "trigger_reflection" } });
  });

  it("reads a stored counter outside 0–10 as the nearest whole count", () => {
    expect(route(errorOf("significant"), -3).consecutive_significant).toBe(1);
    expect(route(errorOf("significant"), Number.NaN).consecutive_significant).toBe(1);
    expect(route(errorOf("significant"), 12.7).consecutive_significant).toBe(10);
    expect(route(errorOf("significant"), 1.9).consecutive_significant).toBe(2);
  });
});
