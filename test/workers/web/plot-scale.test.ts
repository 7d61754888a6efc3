import { describe, expect, it } from "vitest";
import { lastDays, overDays, PLOT_BOX, scaleSeries, summarise, type DayValue } from "../../../src/console/plot";

const day = (i: number) => `2026-12-${String(i + 1).padStart(2, "0")}`;
const series = (values: (number | null | undefined)[]): DayValue[] =>
  values.map((v, i) => (v === undefined ? { day: day(i), value: null, measured: false } : { day: day(i), value: v, measured: true }));

const bottom = PLOT_BOX.height - PLOT_BOX.bottom;

describe("scaleSeries", () => {
  it("leaves a day without a measurement out: a gap splits the line, never a point at 0", () => {
    const s = scaleSeries(series([1, 2, undefined, 3, 4]));
    expect(s.points.map((p) => p.day)).toEqual([day(0), day(1), day(3), day(4)]);
    expect(s.paths).toHaveLength(2);
    expect(s.paths[0]).toMatch(/^M[\d.]+ [\d.]+ L[\d.]+ [\d.]+$/);
    expect(s.points.every((p) => p.y < bottom)).toBe(true);
  });

  it("keeps an unknown value (null cost) a gap too", () => {
    const s = scaleSeries(series([0.5, null, 0.25]));
    expect(s.points.map((p) => p.value)).toEqual([0.5, 0.25]);
    expect(s.paths).toEqual([]);
    expect(s.min).toBe(0.25);
    expect(s.max).toBe(0.5);
  });

  it("places a single point in the middle of its slot with no line", () => {
    const s = scaleSeries(series([7]));
    expect(s.points).toHaveLength(1);
    expect(s.points[0]!.x).toBeCloseTo(PLOT_BOX.left + (PLOT_BOX.width - PLOT_BOX.left - PLOT_BOX.right) / 2, 1);
    expect(s.points[0]!.y).toBe(PLOT_BOX.top);
    expect(s.paths).toEqual([]);
    expect(s.lo).toBe(0);
    expect(s.hi).toBe(7);
  });

  it("puts equal values on one height and all-zero values on the bottom line without dividing by 0", () => {
    const equal = scaleSeries(series([3, 3, 3]));
    expect(new Set(equal.points.map((p) => p.y))).toEqual(new Set([PLOT_BOX.top]));
    const zero = scaleSeries(series([0, 0]));
    expect(zero.hi).toBe(1);
    expect(zero.points.map((p) => p.y)).toEqual([bottom, bottom]);
    expect(zero.points.every((p) => Number.isFinite(p.x) && Number.isFinite(p.y))).toBe(true);
  });

  it("draws nothing for a series with no known value", () => {
    const s = scaleSeries(series([null, undefined, null]));
    expect(s.points).toEqual([]);
    expect(s.paths).toEqual([]);
    expect(s.min).toBeNull();
    expect(s.baseline).toBe(bottom);
  });

  it("keeps x in day order inside the box and larger values higher", () => {
    const s = scaleSeries(series([1, 4, 2]));
    const xs = s.points.map((p) => p.x);
    expect(xs).toEqual([...xs].sort((a, b) => a - b));
    expect(Math.min(...xs)).toBeGreaterThan(PLOT_BOX.left);
    expect(Math.max(...xs)).toBeLessThan(PLOT_BOX.width - PLOT_BOX.right);
    expect(s.points[1]!.y).toBeLessThan(s.points[2]!.y);
    expect(s.points[2]!.y).toBeLessThan(s.points[0]!.y);
  });
});

describe("lastDays and overDays", () => {
  it("lists the UTC days ending today, oldest first, across a month end", () => {
    expect(lastDays(new Date("2026-12-02T23:59:00.000Z"), 4)).toEqual(["2026-11-29", "2026-11-30", "2026-12-01", "2026-12-02"]);
  });

  it("marks a day missing from the map unmeasured and a null one measured but unknown", () => {
    const s = overDays(
      ["a", "b", "c"],
      new Map([
        ["a", 1],
        ["b", null],
      ]),
    );
    expect(s).toEqual([
      { day: "a", value: 1, measured: true },
      { day: "b", value: null, measured: true },
      { day: "c", value: null, measured: false },
    ]);
  });
});

describe("summarise", () => {
  it("states the range, the measured and unknown days and the extremes", () => {
    const text = summarise("Cost (USD)", series([1, null, undefined, 3]), (n) => `$${n}`);
    expect(text).toBe(`Cost (USD) per day, ${day(0)} to ${day(3)}; 3 of 4 days measured; lowest $1, highest $3; 1 day unknown`);
  });
});
