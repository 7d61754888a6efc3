/** @jsxImportSource hono/jsx */
import type { EmployeeSeries } from "../../console/employee-series";
import { Empty, Unknown } from "../components/common";
import { Plot } from "../components/plot";

const usd = (n: number) => `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 4 : 2)}`;
const count = (n: number) => String(Math.round(n));
const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 }).format;
const error = (n: number) => n.toFixed(3);

/**
 * The employee page's cost and prediction error over the last days (issue 37, "Watch"). A cost the
 * runtime never priced is unknown, not 0: its tokens per day are plotted instead.
 */
export function EmployeePlots(props: { series: EmployeeSeries }) {
  const s = props.series;
  const span = `the last ${s.days.length} UTC days`;
  const anyCost = s.cost.some((d) => d.value !== null);
  const anyTokens = s.tokens.some((d) => d.value !== null);
  return (
    <>
      <section aria-labelledby="cost-h" id="employee-cost">
        <h2 id="cost-h">Cost</h2>
        {s.jobs === 0 ? (
          <Empty>No job of this employee reported usage or a price in {span}.</Empty>
        ) : (
          <>
            <p>
              {s.jobs} {s.jobs === 1 ? "job" : "jobs"} in {span}
              {s.unpricedJobs > 0 ? (
                <>
                  ; {s.unpricedJobs} reported no price, so their cost is <Unknown />
                </>
              ) : null}
              .
            </p>
            {anyCost ? (
              <Plot
                id="employee-cost-plot"
                name="Cost (USD)"
                series={s.cost}
                kind="bar"
                format={usd}
                caption="Cost (USD) per UTC day; a day with no priced job is a gap, not 0."
              />
            ) : (
              <p id="employee-cost-unknown">
                Cost per day: <Unknown /> (the runtime reported no price).
              </p>
            )}
            {s.unpricedJobs > 0 && anyTokens ? (
              <Plot
                id="employee-tokens-plot"
                name="Tokens"
                series={s.tokens}
                kind="bar"
                format={count}
                axisFormat={compact}
                caption="Input and output tokens per UTC day, what a runtime without prices does report."
              />
            ) : null}
          </>
        )}
      </section>
      <section aria-labelledby="prediction-h" id="employee-prediction">
        <h2 id="prediction-h">Prediction error</h2>
        {s.scored === 0 ? (
          <Empty>No conversation of this employee was scored in {span}.</Empty>
        ) : (
          <Plot
            id="employee-prediction-plot"
            name="Mean composite prediction error"
            series={s.predictionError}
            format={error}
            caption={`Mean composite prediction error of the conversations closed each UTC day (${s.scored} scored); lower is better, a day without one is a gap.`}
          />
        )}
      </section>
    </>
  );
}
