/** @jsxImportSource hono/jsx */
import type { recentEvalRuns } from "../../console/lists";
import type { currentMatrix } from "../../eval/current";
import type { runView } from "../../eval/run";
import type { Team2x2Report } from "../../eval/team-2x2";
import { Badge, Data, Empty, Num, Pct, Time, Unknown } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

interface CellLike {
  domain: string;
  role: string;
  runtime: string;
  model: string;
  n: number;
  mean?: number;
  ci_low?: number;
  ci_high?: number;
  achieved_mde?: number;
  verdict: string;
  verdict_reason: string;
}

/** Cells with their interval and verdict; a statistic that could not be computed shows as unknown. */
export function CellsTable(props: { cells: readonly CellLike[] }) {
  if (props.cells.length === 0) return <Empty>No measured cell.</Empty>;
  return (
    <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
      <table class="cells">
        <thead>
          <tr>
            <th scope="col">Domain</th>
            <th scope="col">Role</th>
            <th scope="col">Runtime / model</th>
            <th scope="col">n</th>
            <th scope="col">Mean</th>
            <th scope="col">Interval</th>
            <th scope="col">Achieved MDE</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {props.cells.map((c) => (
            <tr>
              <td>{c.domain}</td>
              <td>{c.role}</td>
              <td>
                {c.runtime} / {c.model}
              </td>
              <td>{c.n}</td>
              <td>
                <Pct value={c.mean} />
              </td>
              <td>
                {c.ci_low !== undefined && c.ci_high !== undefined ? (
                  <span class="interval">
                    [<Pct value={c.ci_low} />, <Pct value={c.ci_high} />]
                  </span>
                ) : (
                  <Unknown />
                )}
              </td>
              <td>
                <Pct value={c.achieved_mde} />
              </td>
              <td>
                <Badge status={c.verdict} kind="verdict" /> <span class="reason">{c.verdict_reason.replaceAll("_", " ")}</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

type Current = Awaited<ReturnType<typeof currentMatrix>>;
type Runs = Awaited<ReturnType<typeof recentEvalRuns>>;

export function MatrixPage(props: { viewer: Viewer; current: Current; runs: Runs }) {
  const cur = props.current;
  return (
    <ConsolePage title="Capability matrix" path="/console/matrix" viewer={props.viewer}>
      <section id="matrix" data-live="eval." aria-label="The current matrix">
        {!cur ? (
          <Empty>No measurement has written a matrix yet (POST /v1/eval/matrix starts one).</Empty>
        ) : "refused" in cur ? (
          <div class="problem" role="alert" data-code={cur.refused.reason}>
            <p>
              The stored matrix (from run <a href={`/console/matrix/${cur.run_id}`}>{cur.run_id}</a>) is refused:{" "}
              <code>{cur.refused.reason}</code>
            </p>
            <Data value={cur.refused} />
          </div>
        ) : (
          <>
            <p>
              From run <a href={`/console/matrix/${cur.run_id}`}>{cur.run_id}</a> · generated <Time at={cur.matrix.header.generated_at} /> ·
              declared MDE <Pct value={cur.matrix.header.declared_mde} />, α <Num value={cur.matrix.header.alpha} />, power{" "}
              <Num value={cur.matrix.header.power} />, K {cur.matrix.header.k}, clustered by {cur.matrix.header.cluster_key}; planner{" "}
              {cur.matrix.header.planner}
            </p>
            <CellsTable cells={cur.matrix.cells} />
          </>
        )}
        <h2>Measurements</h2>
        {props.runs.length === 0 ? (
          <Empty>No measurement yet.</Empty>
        ) : (
          <ul>
            {props.runs.map((r) => (
              <li>
                <a href={`/console/matrix/${r.run_id}`}>{r.run_id}</a> <Badge status={r.status} /> <Time at={r.created_at} />
              </li>
            ))}
          </ul>
        )}
      </section>
    </ConsolePage>
  );
}

type Run = Awaited<ReturnType<typeof runView>>;

export function MatrixRunPage(props: { viewer: Viewer; run: Run }) {
  const r = props.run;
  const report = r.report as ({ cells?: CellLike[]; team_2x2?: Team2x2Report } & Record<string, unknown>) | undefined;
  const { cells, team_2x2, ...restOfReport } = report ?? {};
  return (
    <ConsolePage title={`Measurement ${r.run_id}`} path="/console/matrix" viewer={props.viewer}>
      <p>
        <a href="/console/matrix">Capability matrix</a> › <code>{r.run_id}</code>
      </p>
      <section id="matrix-run" data-live="eval." aria-label="Measurement">
        <p>
          <Badge status={r.status} /> · started <Time at={r.created_at} />
          {"ended_at" in r && r.ended_at ? (
            <>
              {" "}
              · ended <Time at={r.ended_at} />
            </>
          ) : null}
          {"stop_reason" in r && r.stop_reason ? <> · stopped: {String(r.stop_reason)}</> : null}
        </p>
        <h2>Progress</h2>
        <Data value={r.progress} />
        <h2>Spend</h2>
        <p>
          Reported <Num value={r.spend.reported_usd} digits={4} /> USD · runs whose cost nobody reported:{" "}
          {r.spend.runs_with_unknown_cost ? <strong>{r.spend.runs_with_unknown_cost} (unknown, not zero)</strong> : "none"}
        </p>
        <h2>Cells</h2>
        {cells ? <CellsTable cells={cells} /> : <Empty>The report comes when the measurement ends.</Empty>}
        {team_2x2 ? <Team2x2 report={team_2x2} /> : null}
        {report ? (
          <details>
            <summary>The rest of the report</summary>
            <Data value={restOfReport} />
          </details>
        ) : null}
        <details>
          <summary>Request and declared resolution</summary>
          <Data value={{ request: r.request, declared_resolution: r.declared_resolution }} />
        </details>
      </section>
    </ConsolePage>
  );
}

/** The team 2×2: which role to invest in first, read from whole rounds; never a team attribution. */
function Team2x2(props: { report: Team2x2Report }) {
  const t = props.report;
  const arms = [
    ["weak planner, weak executor", t.arms?.weak_weak],
    ["strong planner, weak executor", t.arms?.strong_weak],
    ["weak planner, strong executor", t.arms?.weak_strong],
    ["strong planner, strong executor", t.arms?.strong_strong],
  ] as const;
  return (
    <>
      <h2>Team 2×2: which role to invest in first</h2>
      <p>
        Invest first in: <strong>{t.invest_first}</strong> ({t.reason}) · cases with all four arms scored: {t.complete_rows}, without:{" "}
        {t.incomplete_rows}
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">arm</th>
            <th scope="col">mean score</th>
          </tr>
        </thead>
        <tbody>
          {arms.map(([name, value]) => (
            <tr>
              <td>{name}</td>
              <td>
                <Num value={value} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        Shapley value of the planner: <Num value={t.planner_shapley} /> · of the executor: <Num value={t.executor_shapley} />
      </p>
    </>
  );
}
