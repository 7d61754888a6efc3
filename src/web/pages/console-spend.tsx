/** @jsxImportSource hono/jsx */
import type { LedgerRow } from "../../spend/ledger";
import type { BudgetView } from "../../spend/view";
import { Badge, Csrf, Empty, Num, Pct, ProblemNote, Time, Unknown, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

/** A refused lift, shown on the budget it was for. */
export interface LiftProblem {
  scope: string;
  id: string;
  problem: FormProblem;
}

export interface SpendPageProps {
  viewer: Viewer;
  month: string;
  /** Every day of the month (`YYYY-MM-DD`), oldest first, with its ledger row when it has one. */
  days: { day: string; row: LedgerRow | undefined }[];
  groups: { title: string; id: string; keyLabel: string; rows: LedgerRow[] }[];
  budgets: BudgetView[];
  /** The month the budgets are of (the current one). */
  budgetMonth: string;
  problem?: LiftProblem | null;
}

/** A figure of the ledger: unknown stays unknown, never 0. */
function Figure(props: { value: number | "unknown"; usd?: boolean }) {
  if (props.value === "unknown") return <Unknown />;
  return props.usd ? <span class="num">${props.value.toFixed(4)}</span> : <Num value={props.value} />;
}

function LedgerTable(props: { id: string; title: string; keyLabel: string; rows: LedgerRow[] }) {
  return (
    <section id={props.id} aria-labelledby={`${props.id}-title`}>
      <h2 id={`${props.id}-title`}>{props.title}</h2>
      {props.rows.length === 0 ? (
        <Empty>No job reported usage or a price this month.</Empty>
      ) : (
        <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
          <table>
            <thead>
              <tr>
                <th scope="col">{props.keyLabel}</th>
                <th scope="col">Jobs</th>
                <th scope="col">Cost (USD)</th>
                <th scope="col">Jobs without a price</th>
                <th scope="col">Input tokens</th>
                <th scope="col">Output tokens</th>
                <th scope="col">Cache read</th>
                <th scope="col">Cache write</th>
              </tr>
            </thead>
            <tbody>
              {props.rows.map((r) => (
                <tr data-key={r.key ?? ""}>
                  <th scope="row">{r.key === null ? <span class="none">none</span> : <code>{r.key}</code>}</th>
                  <td>{r.jobs}</td>
                  <td>
                    <Figure value={r.cost_usd} usd />
                  </td>
                  <td>{r.jobs_without_cost}</td>
                  <td>
                    <Figure value={r.input_tokens} />
                  </td>
                  <td>
                    <Figure value={r.output_tokens} />
                  </td>
                  <td>
                    <Figure value={r.cache_read_input_tokens} />
                  </td>
                  <td>
                    <Figure value={r.cache_creation_input_tokens} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/**
 * Cost per day: a table anyone can read, which the client script draws as a uPlot line. A day whose
 * jobs priced nothing (or that has no ledger row) is a gap in the line, not 0.
 */
function PerDay(props: { days: SpendPageProps["days"] }) {
  const data = JSON.stringify({
    labels: props.days.map((d) => d.day.slice(8)),
    series: [{ label: "cost (USD)", values: props.days.map((d) => (d.row && d.row.cost_usd !== "unknown" ? d.row.cost_usd : null)) }],
    unit: "day",
  });
  const withRows = props.days.filter((d) => d.row);
  return (
    <section id="spend-per-day" aria-labelledby="spend-per-day-title">
      <h2 id="spend-per-day-title">Cost per day</h2>
      <figure class="chart-figure" aria-labelledby="spend-per-day-caption">
        <figcaption id="spend-per-day-caption">Cost (USD) per UTC day; a day with no priced job is a gap, not 0.</figcaption>
        <div class="chart" id="spend-per-day-chart" data-chart="line" data-chart-data={data} aria-hidden="true"></div>
        {withRows.length === 0 ? (
          <Empty>No job reported usage or a price this month.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table class="chart-table">
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Jobs</th>
                  <th scope="col">Cost (USD)</th>
                  <th scope="col">Input + output tokens</th>
                </tr>
              </thead>
              <tbody>
                {withRows.map(({ day, row }) => (
                  <tr data-day={day}>
                    <th scope="row">{day}</th>
                    <td>{row!.jobs}</td>
                    <td>
                      <Figure value={row!.cost_usd} usd />
                    </td>
                    <td>
                      {row!.input_tokens === "unknown" && row!.output_tokens === "unknown" ? (
                        <Unknown />
                      ) : (
                        <Num
                          value={
                            (row!.input_tokens === "unknown" ? 0 : row!.input_tokens) +
                            (row!.output_tokens === "unknown" ? 0 : row!.output_tokens)
                          }
                        />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </figure>
    </section>
  );
}

function Limit(props: { budget: BudgetView }) {
  const l = props.budget.limit;
  if (!l) return <span class="none">no longer configured</span>;
  const parts = [
    ...(l.monthly_usd !== undefined ? [`$${l.monthly_usd}`] : []),
    ...(l.monthly_tokens !== undefined ? [`${l.monthly_tokens} tokens`] : []),
  ];
  return <span>{parts.join(" or ")}</span>;
}

function LiftForm(props: { budget: BudgetView; viewer: Viewer }) {
  const b = props.budget;
  return (
    <form class="lift" method="post" action={`/console/spend/budgets/${b.scope}/${b.id}/lift`}>
      <Csrf token={props.viewer.csrf} />
      <button type="submit" aria-label={`Lift the ${b.scope} budget of ${b.id} for the rest of the month`}>
        Lift
      </button>
    </form>
  );
}

function Budgets(props: { budgets: BudgetView[]; month: string; viewer: Viewer; problem?: LiftProblem | null }) {
  const manager = props.viewer.role !== "viewer";
  return (
    <section id="budgets" data-live="budget. employee." aria-labelledby="budgets-title">
      <h2 id="budgets-title">Budgets ({props.month})</h2>
      {props.budgets.length === 0 ? (
        <Empty>No budget is configured (the `budgets` config section).</Empty>
      ) : (
        <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
          <table>
            <thead>
              <tr>
                <th scope="col">Budget</th>
                <th scope="col">Limit</th>
                <th scope="col">Spent (USD)</th>
                <th scope="col">Spent (tokens)</th>
                <th scope="col">Of the limit</th>
                <th scope="col">State</th>
                <th scope="col">Warned</th>
                <th scope="col">Exceeded</th>
                <th scope="col">Lifted</th>
              </tr>
            </thead>
            <tbody>
              {props.budgets.map((b) => (
                <tr id={`budget-${b.scope}-${b.id}`} data-budget={`${b.scope}:${b.id}`}>
                  <th scope="row">
                    {b.scope} {b.scope === "company" ? null : <code>{b.id}</code>}
                  </th>
                  <td>
                    <Limit budget={b} />
                  </td>
                  <td>
                    <Figure value={b.spent.usd} usd />
                  </td>
                  <td>
                    <Figure value={b.spent.tokens} />
                  </td>
                  <td>
                    <Pct value={b.ratio} />
                  </td>
                  <td>
                    <Badge status={b.state} />
                    <ProblemNote
                      problem={props.problem && props.problem.scope === b.scope && props.problem.id === b.id ? props.problem.problem : null}
                    />
                    {manager && b.state === "exceeded" ? <LiftForm budget={b} viewer={props.viewer} /> : null}
                  </td>
                  <td>{b.warned_at ? <Time at={b.warned_at} /> : <span class="none">no</span>}</td>
                  <td>{b.exceeded_at ? <Time at={b.exceeded_at} /> : <span class="none">no</span>}</td>
                  <td>
                    {b.lifted_at ? (
                      <>
                        <Time at={b.lifted_at} /> by <code>{b.lifted_by}</code>
                      </>
                    ) : (
                      <span class="none">no</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** `/console/spend`: the cost ledger of a month and the budgets of this one (docs/spend.md). */
export function SpendPage(props: SpendPageProps) {
  return (
    <ConsolePage title="Spend" path="/console/spend" viewer={props.viewer}>
      <form method="get" action="/console/spend" role="search">
        <label for="month">Month (UTC)</label>
        <input id="month" name="month" type="month" value={props.month} />
        <button type="submit">Show</button>
      </form>
      <p>
        Usage and prices as the runners reported them for {props.month}. A figure no job reported is <Unknown />, never 0: a subscription
        runtime reports tokens but no price.
      </p>
      <Budgets budgets={props.budgets} month={props.budgetMonth} viewer={props.viewer} problem={props.problem} />
      <PerDay days={props.days} />
      {props.groups.map((g) => (
        <LedgerTable id={g.id} title={g.title} keyLabel={g.keyLabel} rows={g.rows} />
      ))}
    </ConsolePage>
  );
}
