/** @jsxImportSource hono/jsx */
import type { topologyView } from "../../topology/view";
import { Badge, Data, Empty, Num, Pct, Time, Unknown } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage, Countdown } from "./console-shell";

type Topology = Awaited<ReturnType<typeof topologyView>>;

/** One rerouting edge (a task class from one employee to a sibling) and the reject rates known for it. */
export interface EdgeRates {
  label: string;
  kind: "proposal" | "override";
  from_rate: number | null;
  to_rate: number | null;
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** The chart's data: each pending proposal's evidence, and each override's baseline (the to-agent's rate where recorded). */
export function edgeRates(t: Topology): EdgeRates[] {
  const pending = t.pending.map((p) => {
    const e = (p.evidence ?? {}) as { reject_rate?: unknown; sibling?: { reject_rate?: unknown } };
    return {
      label: `${p.task_class}: ${p.from_agent} → ${p.to_agent}`,
      kind: "proposal" as const,
      from_rate: num(e.reject_rate),
      to_rate: num(e.sibling?.reject_rate),
    };
  });
  const overrides = t.overrides.map((o) => ({
    label: `${o.task_class}: ${o.from_agent} → ${o.to_agent}`,
    kind: "override" as const,
    from_rate: num(o.baseline_reject_rate),
    to_rate: null,
  }));
  return [...pending, ...overrides];
}

/**
 * Reject rates per edge: a table anyone can read (and a screen reader announces), which the client
 * script turns into a bar chart (uPlot) when scripts run. Unknown rates stay unknown: no bar, not 0.
 */
export function RatesChart(props: { id: string; caption: string; edges: EdgeRates[] }) {
  if (props.edges.length === 0) return <Empty>No edge has evidence yet.</Empty>;
  const data = JSON.stringify({
    labels: props.edges.map((e) => e.label),
    series: [
      { label: "from-agent reject rate", values: props.edges.map((e) => e.from_rate) },
      { label: "to-agent reject rate", values: props.edges.map((e) => e.to_rate) },
    ],
    unit: "rate",
  });
  return (
    <figure class="chart-figure" aria-labelledby={`${props.id}-caption`}>
      <figcaption id={`${props.id}-caption`}>{props.caption}</figcaption>
      <div class="chart" id={props.id} data-chart="bars" data-chart-data={data} aria-hidden="true"></div>
      <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
        <table class="chart-table">
          <thead>
            <tr>
              <th scope="col">Edge</th>
              <th scope="col">Kind</th>
              <th scope="col">From-agent reject rate</th>
              <th scope="col">To-agent reject rate</th>
            </tr>
          </thead>
          <tbody>
            {props.edges.map((e) => (
              <tr>
                <th scope="row">{e.label}</th>
                <td>{e.kind}</td>
                <td>
                  <Pct value={e.from_rate} />
                </td>
                <td>
                  <Pct value={e.to_rate} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

export function TopologyPage(props: { viewer: Viewer; now: Date; topology: Topology }) {
  const t = props.topology;
  const observing = t.overrides.filter((o) => o.status === "active");
  return (
    <ConsolePage title="Topology" path="/console/topology" viewer={props.viewer}>
      <section id="topology" data-live="topology. approval." aria-label="Topology">
        <p>
          Topology evolution is <strong>{t.enabled ? "on" : "off"}</strong> · approval broker{" "}
          {t.approval_broker_available ? "reachable" : "unavailable"} · last tick{" "}
          {t.last_tick_at ? <Time at={t.last_tick_at} /> : <Unknown label="never" />}
        </p>
        <h2>Reject rates per edge</h2>
        <RatesChart
          id="reject-rates"
          caption="Reject rate of the employee a class is routed from, and of the sibling it is (or would be) rerouted to"
          edges={edgeRates(t)}
        />
        <h2>Pending proposals ({t.pending.length})</h2>
        {t.pending.length === 0 ? (
          <Empty>No reroute is waiting for a decision.</Empty>
        ) : (
          t.pending.map((p) => (
            <article class="card" id={`proposal-${p.proposal_id}`}>
              <h3>
                {p.task_class}: <code>{p.from_agent}</code> → <code>{p.to_agent}</code>
              </h3>
              <p>
                Proposed <Time at={p.created_at} /> · decide it in <a href={`/console/approvals#approval-${p.approval_id}`}>Approvals</a>
              </p>
              <Data value={p.evidence} />
            </article>
          ))
        )}
        <h2>Observation windows ({observing.length})</h2>
        {observing.length === 0 ? (
          <Empty>No override is under observation.</Empty>
        ) : (
          <ul>
            {observing.map((o) => (
              <li>
                {o.task_class}: <code>{o.from_agent}</code> → <code>{o.to_agent}</code> observed until <Time at={o.observe_until} /> (
                {o.observe_until ? <Countdown at={o.observe_until} now={props.now} /> : <Unknown />}){o.extended ? ", extended once" : ""}
              </li>
            ))}
          </ul>
        )}
        <h2>Overrides ({t.overrides.length})</h2>
        {t.overrides.length === 0 ? (
          <Empty>No override yet.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Class</th>
                  <th scope="col">From → to</th>
                  <th scope="col">Status</th>
                  <th scope="col">Approved</th>
                  <th scope="col">Observe until</th>
                  <th scope="col">Baseline reject rate</th>
                  <th scope="col">Resolution</th>
                </tr>
              </thead>
              <tbody>
                {t.overrides.map((o) => (
                  <tr>
                    <td>{o.task_class}</td>
                    <td>
                      <code>{o.from_agent}</code> → <code>{o.to_agent}</code>
                    </td>
                    <td>
                      <Badge status={o.status} />
                    </td>
                    <td>
                      <Time at={o.approved_at} /> by <code>{o.approved_by ?? ""}</code>
                    </td>
                    <td>
                      <Time at={o.observe_until} />
                    </td>
                    <td>
                      <Pct value={o.baseline_reject_rate} /> (<Num value={o.baseline_samples} /> samples)
                    </td>
                    <td>{"resolution" in o && o.resolution ? String(o.resolution) : ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </ConsolePage>
  );
}
