/**
 * The arithmetic of the console's day plots (src/web/components/plot.tsx), kept pure so it is tested
 * without rendering. A day with no measurement, or a measurement whose value nobody reported (a
 * runtime that prices nothing), is a gap: never drawn as 0 (DESIGN principle 4).
 */

/** One UTC day of a series. `value` null is unknown; `measured` false means nothing was recorded that day. */
export interface DayValue {
  day: string;
  value: number | null;
  measured: boolean;
}

/** The drawing box in viewBox units, with the margins the axis labels use. */
export interface PlotBox {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

// 480 wide so that at a 390 px viewport the 15-unit labels still read at about 11 px.
export const PLOT_BOX: PlotBox = { width: 480, height: 180, left: 64, right: 8, top: 10, bottom: 26 };

export interface ScaledPoint {
  day: string;
  value: number;
  x: number;
  y: number;
}

export interface ScaledSeries {
  box: PlotBox;
  /** The value axis: from `lo` (at the bottom) to `hi` (at the top); it always includes 0. */
  lo: number;
  hi: number;
  /** The smallest and largest known value; null when no value is known. */
  min: number | null;
  max: number | null;
  /** The known values only, oldest first. */
  points: ScaledPoint[];
  /** One SVG path per run of two or more consecutive known days (a lone day is only its marker). */
  paths: string[];
  /** The y of the value 0 (where a bar starts). */
  baseline: number;
  /** The width of one day on the x axis. */
  slot: number;
}

const round = (n: number) => Math.round(n * 10) / 10;
const known = (d: DayValue): d is DayValue & { value: number } => d.value !== null && Number.isFinite(d.value);

/** The `n` UTC days ending with `now`'s, oldest first (`YYYY-MM-DD`). */
export function lastDays(now: Date, n: number): string[] {
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: n }, (_, i) => new Date(end - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

/** The series over `days`: a day `byDay` does not hold is unmeasured; its value may be unknown (null). */
export function overDays(days: readonly string[], byDay: ReadonlyMap<string, number | null>): DayValue[] {
  return days.map((day) =>
    byDay.has(day) ? { day, value: byDay.get(day) ?? null, measured: true } : { day, value: null, measured: false },
  );
}

/** Places each known value of `series` (one slot per day, in order) in `box`. */
export function scaleSeries(series: readonly DayValue[], box: PlotBox = PLOT_BOX): ScaledSeries {
  const values = series.filter(known).map((d) => d.value);
  const min = values.length ? Math.min(...values) : null;
  const max = values.length ? Math.max(...values) : null;
  const lo = Math.min(0, min ?? 0);
  // All values 0 (or none): an axis of 0..1 keeps them on the bottom line instead of dividing by 0.
  const hi = Math.max(0, max ?? 0) === lo ? lo + 1 : Math.max(0, max ?? 0);
  const plotW = box.width - box.left - box.right;
  const plotH = box.height - box.top - box.bottom;
  const slot = series.length ? plotW / series.length : plotW;
  const yOf = (v: number) => round(box.top + plotH * (1 - (v - lo) / (hi - lo)));
  const points: ScaledPoint[] = [];
  const paths: string[] = [];
  let run: ScaledPoint[] = [];
  const endRun = () => {
    if (run.length >= 2) paths.push(run.map((p, i) => `${i === 0 ? "M" : "L"}${p.x} ${p.y}`).join(" "));
    run = [];
  };
  series.forEach((d, i) => {
    if (!known(d)) return endRun();
    const p = { day: d.day, value: d.value, x: round(box.left + slot * (i + 0.5)), y: yOf(d.value) };
    points.push(p);
    run.push(p);
  });
  endRun();
  return { box, lo, hi, min, max, points, paths, baseline: yOf(0), slot: round(slot) };
}

/**
 * A sentence a screen reader announces for the plot: the range of days, how many were measured,
 * how many of those are unknown, and the smallest and largest known value.
 */
export function summarise(name: string, series: readonly DayValue[], format: (n: number) => string): string {
  if (series.length === 0) return `${name}: no days`;
  const measured = series.filter((d) => d.measured);
  const values = series.filter(known).map((d) => d.value);
  const unknown = measured.length - measured.filter(known).length;
  const parts = [`${name} per day, ${series[0]!.day} to ${series.at(-1)!.day}`, `${measured.length} of ${series.length} days measured`];
  if (values.length) parts.push(`lowest ${format(Math.min(...values))}, highest ${format(Math.max(...values))}`);
  if (unknown) parts.push(`${unknown} ${unknown === 1 ? "day" : "days"} unknown`);
  return parts.join("; ");
}
