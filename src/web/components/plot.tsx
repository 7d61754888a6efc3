/** @jsxImportSource hono/jsx */
import { scaleSeries, summarise, type DayValue } from "../../console/plot";
import { Unknown } from "./common";

/**
 * A series over UTC days drawn on the server as SVG (no script, no dependency): a line or bars, the
 * value axis labelled at its ends, the first and last day under it, a hover title on each known day,
 * and the numbers in a table under a disclosure for anyone who would rather read them. Unknown days
 * are gaps; the table says "unknown" for a day measured without a value.
 */
export function Plot(props: {
  id: string;
  /** What is plotted, e.g. "Cost (USD)". */
  name: string;
  series: DayValue[];
  kind?: "line" | "bar";
  format: (n: number) => string;
  /** The axis labels' format when `format` is too long for the margin (tokens: "12k"). */
  axisFormat?: (n: number) => string;
  caption?: string;
}) {
  const s = scaleSeries(props.series);
  const b = s.box;
  const axis = props.axisFormat ?? props.format;
  const label = summarise(props.name, props.series, props.format);
  const bottom = b.height - b.bottom;
  const barWidth = Math.max(1, Math.round(s.slot * 7) / 10);
  const first = props.series[0]?.day;
  const last = props.series.at(-1)?.day;
  const measured = props.series.filter((d) => d.measured);
  return (
    <figure class="plot" id={props.id} data-points={String(s.points.length)}>
      {props.caption ? <figcaption>{props.caption}</figcaption> : null}
      <svg
        viewBox={`0 0 ${b.width} ${b.height}`}
        width="100%"
        preserveAspectRatio="xMidYMid meet"
        role="img"
        aria-label={label}
        xmlns="http://www.w3.org/2000/svg"
      >
        <line class="plot-axis" x1={b.left} y1={b.top} x2={b.left} y2={bottom} stroke="#c9ced8" />
        <line class="plot-axis" x1={b.left} y1={s.baseline} x2={b.width - b.right} y2={s.baseline} stroke="#c9ced8" />
        <text class="plot-label" x={b.left - 6} y={b.top + 10} text-anchor="end" font-size="15">
          {axis(s.hi)}
        </text>
        <text class="plot-label" x={b.left - 6} y={bottom} text-anchor="end" font-size="15">
          {axis(s.lo)}
        </text>
        {first ? (
          <text class="plot-label" x={b.left} y={b.height - 4} font-size="15">
            {first}
          </text>
        ) : null}
        {last && last !== first ? (
          <text class="plot-label" x={b.width - b.right} y={b.height - 4} text-anchor="end" font-size="15">
            {last}
          </text>
        ) : null}
        {props.kind === "bar"
          ? s.points.map((p) => (
              <rect
                class="plot-point plot-bar"
                data-day={p.day}
                x={Math.round((p.x - barWidth / 2) * 10) / 10}
                // A 0 is a measurement: a one-unit bar on the axis, never nothing.
                y={p.value >= 0 ? Math.min(p.y, s.baseline - 1) : s.baseline}
                width={barWidth}
                height={p.value >= 0 ? Math.max(1, s.baseline - p.y) : Math.max(1, p.y - s.baseline)}
                fill="#0b4fa3"
              >
                <title>{`${p.day}: ${props.format(p.value)}`}</title>
              </rect>
            ))
          : [
              ...s.paths.map((d) => <path class="plot-line" d={d} fill="none" stroke="#0b4fa3" stroke-width="2" />),
              ...s.points.map((p) => (
                <circle class="plot-point" data-day={p.day} cx={p.x} cy={p.y} r="4" fill="#0b4fa3">
                  <title>{`${p.day}: ${props.format(p.value)}`}</title>
                </circle>
              )),
            ]}
      </svg>
      <details class="plot-table">
        <summary>{props.name} per day as a table</summary>
        <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
          <table>
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col">{props.name}</th>
              </tr>
            </thead>
            <tbody>
              {measured.map((d) => (
                <tr data-day={d.day}>
                  <th scope="row">{d.day}</th>
                  <td>{d.value === null || !Number.isFinite(d.value) ? <Unknown /> : <span class="num">{props.format(d.value)}</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
