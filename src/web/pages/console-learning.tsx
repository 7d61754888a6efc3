/** @jsxImportSource hono/jsx */
import type { playbookView } from "../../evolution/playbook-ops";
import type { soulVersionsView } from "../../evolution/soul-api";
import type { evolutionView } from "../../evolution/view";
import type { employeeView } from "../../tasks/employees";
import { Badge, Csrf, Data, Empty, FieldErrors, Num, ProblemNote, Time, Unknown, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";
import { EmployeeTabs } from "./console-employees";

type Employee = ReturnType<typeof employeeView>;
type Evolution = Awaited<ReturnType<typeof evolutionView>>;
/** `GET /v1/employees/:id/playbook` (the non-gene form). */
type PlaybookListing = Extract<Awaited<ReturnType<typeof playbookView>>, { entries: unknown }>;
type Entry = PlaybookListing["entries"][number];
type SoulVersions = Awaited<ReturnType<typeof soulVersionsView>>;

/** A refused retire, shown on the entry it was for. */
export interface RetireProblem {
  entryId: string;
  problem: FormProblem;
  reason?: string;
}

/** A bar chart drawn by the client script from the numbers of the table beside it (unknown stays a gap). */
function Bars(props: { id: string; labels: string[]; series: { label: string; values: (number | null)[] }[]; unit: string }) {
  return (
    <div
      class="chart"
      id={props.id}
      data-chart="bars"
      data-chart-data={JSON.stringify({ labels: props.labels, series: props.series, unit: props.unit })}
      aria-hidden="true"
    ></div>
  );
}

/** A unified diff, each line marked by its own sign (the colour only repeats it). */
export function Diff(props: { text: string }) {
  // The patch's "=====" separator line says nothing a reader needs.
  const lines = props.text
    .replace(/\n$/, "")
    .split("\n")
    .filter((l) => !/^=+$/.test(l));
  return (
    <pre class="diff">
      {lines.map((l) => {
        const kind =
          l.startsWith("+++") || l.startsWith("---")
            ? "file"
            : l.startsWith("+")
              ? "add"
              : l.startsWith("-")
                ? "del"
                : l.startsWith("@@")
                  ? "hunk"
                  : "ctx";
        return <span class={`d-${kind}`}>{`${l}\n`}</span>;
      })}
    </pre>
  );
}

function netScore(e: Entry): number {
  let n = 0;
  for (const a of e.applications) n += a.outcome === "success" ? 1 : -1;
  return n;
}

function RetireForm(props: { employeeId: string; e: Entry; viewer: Viewer; problem?: RetireProblem | null }) {
  const id = `retire-${props.e.entry_id}`;
  const mine = props.problem?.entryId === props.e.entry_id ? props.problem : null;
  const reasonErrors = mine?.problem.fields.reason;
  return (
    <form class="retire" method="post" action={`/console/employees/${props.employeeId}/playbook/${props.e.entry_id}/retire`}>
      <Csrf token={props.viewer.csrf} />
      <ProblemNote problem={mine?.problem} />
      <label for={id}>Reason to retire {props.e.entry_id}</label>
      <input
        id={id}
        name="reason"
        required
        maxlength={200}
        value={mine?.reason ?? ""}
        aria-invalid={reasonErrors ? "true" : undefined}
        aria-describedby={reasonErrors ? `${id}-errors` : undefined}
      />
      <FieldErrors id={`${id}-errors`} errors={reasonErrors} />
      <button type="submit">Retire</button>
    </form>
  );
}

function PlaybookEntries(props: {
  employeeId: string;
  entries: readonly Entry[];
  viewer: Viewer;
  canRetire: boolean;
  problem?: RetireProblem | null;
}) {
  if (props.entries.length === 0) return <Empty>No playbook entry yet (evolution rounds and applied SOUL migrations add them).</Empty>;
  return (
    <ol class="entries">
      {props.entries.map((e) => (
        <li id={`entry-${e.entry_id}`} class="card" data-state={e.state}>
          <h3>
            <code>{e.entry_id}</code> · {e.category} <Badge status={e.state} />
            {e.state_reason ? <span class="reason"> ({e.state_reason.replaceAll("_", " ")})</span> : null}
          </h3>
          <p class="prose">{e.content}</p>
          <p class="meta">
            version {e.version} · net score <Num value={netScore(e)} /> over {e.applications.length} applications · streak{" "}
            {e.success_streak} · in this state since <Time at={e.state_since} />
          </p>
          <p class="meta">
            Signals {e.signals_match.length ? e.signals_match.join(", ") : <span class="none">none</span>} · eval cases{" "}
            {e.eval_cases.join(", ")} · from {e.derived_from.map((d) => `${d.kind} ${d.id}`).join(", ")}
          </p>
          {e.assertions.length || e.failure_history.length ? (
            <details>
              <summary>Assertions and failure history</summary>
              <Data value={{ assertions: e.assertions, failure_history: e.failure_history }} />
            </details>
          ) : null}
          {props.canRetire && e.state !== "retired" ? (
            <RetireForm employeeId={props.employeeId} e={e} viewer={props.viewer} problem={props.problem} />
          ) : props.problem?.entryId === e.entry_id ? (
            <ProblemNote problem={props.problem.problem} />
          ) : null}
        </li>
      ))}
    </ol>
  );
}

/**
 * The learning tab: what the prediction engine, the evolution triggers and the AEE rounds know of the
 * employee (`GET /v1/employees/:id/evolution`), its playbook (`…/playbook`, export and retire), and its
 * SOUL versions with their diffs (`…/soul/versions`).
 */
export function LearningPage(props: {
  viewer: Viewer;
  employee: Employee;
  evolution: Evolution;
  playbook: PlaybookListing;
  soul: SoulVersions;
  canRetire: boolean;
  problem?: RetireProblem | null;
}) {
  const e = props.employee;
  const v = props.evolution;
  const errors = [...v.recent_routes].reverse();
  const gates = Object.entries(v.telemetry.rejections.by_gate);
  const stag = v.stagnation;
  return (
    <ConsolePage title={`${e.name}: learning`} path="/console/employees" viewer={props.viewer}>
      <EmployeeTabs id={e.employee_id} tab="learning" />
      <section id="learning" data-live="evolution. conversation. playbook." aria-label="Learning">
        <h2>Prediction and triggers</h2>
        <p>
          Evolution is <Badge status={v.status} /> · predictions <Num value={v.counters.predictions} /> · significant in a row{" "}
          <Num value={v.counters.consecutive_significant} /> · cooldown{" "}
          {v.cooldown.active ? (
            <>
              until <Time at={v.cooldown.until} />
            </>
          ) : (
            "none"
          )}{" "}
          · last trigger{" "}
          {v.last_trigger ? (
            <>
              {String(v.last_trigger.kind)} at <Time at={v.last_trigger.at} />
            </>
          ) : (
            <Unknown label="never" />
          )}
          {v.lock ? (
            <>
              {" "}
              · locked by <code>{v.lock.held_by}</code> until <Time at={v.lock.until} />
            </>
          ) : null}
        </p>
        <h3>Thresholds</h3>
        <Data value={v.thresholds} />
        <h3>Prediction error of recent conversations</h3>
        {errors.length === 0 ? (
          <Empty>No conversation has been scored yet.</Empty>
        ) : (
          <figure class="chart-figure" aria-labelledby="err-caption">
            <figcaption id="err-caption">
              Composite prediction error per closed conversation, oldest first, and where each was routed
            </figcaption>
            <Bars
              id="error-chart"
              labels={errors.map((r) => r.at)}
              series={[
                { label: "composite error", values: errors.map((r) => (typeof r.composite_error === "number" ? r.composite_error : null)) },
              ]}
              unit="error"
            />
            <Data value={v.recent_routes} />
          </figure>
        )}
        <h3>Evolution requests</h3>
        {v.recent_requests.length === 0 ? <Empty>No evolution request yet.</Empty> : <Data value={v.recent_requests} />}

        <h2 id="playbook">Playbook</h2>
        <p>
          Revision {props.playbook.revision} · live entries {props.playbook.capacity.live} of {props.playbook.capacity.capacity}
          {props.playbook.capacity.over ? <strong> ({props.playbook.capacity.over} over capacity)</strong> : null} · by state:{" "}
          {Object.entries(v.playbook.entries).map(([state, n]) => (
            <span class="chip">
              {state} {n}
            </span>
          ))}
        </p>
        <p>
          <a href={`/console/employees/${e.employee_id}/playbook/export`} download={`${e.employee_id}-playbook-genes.json`}>
            Export the playbook as GEP genes (JSON)
          </a>
        </p>
        {!props.canRetire ? <p class="note">Retiring an entry needs the manager role.</p> : null}
        <PlaybookEntries
          employeeId={e.employee_id}
          entries={props.playbook.entries}
          viewer={props.viewer}
          canRetire={props.canRetire}
          problem={props.problem}
        />

        <h2>Evolution rounds</h2>
        <p data-stagnant={String(stag.stagnant)}>
          Stagnation: {stag.stagnant ? <strong>stagnant ({stag.reason.replaceAll("_", " ")})</strong> : stag.reason.replaceAll("_", " ")}{" "}
          over the last {stag.window} rounds that ran
        </p>
        {v.rounds.length === 0 ? (
          <Empty>No round yet.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Round</th>
                  <th scope="col">Status</th>
                  <th scope="col">Step</th>
                  <th scope="col">Intent</th>
                  <th scope="col">Verdict</th>
                  <th scope="col">Ended</th>
                </tr>
              </thead>
              <tbody>
                {v.rounds.map((r) => (
                  <tr>
                    <td>
                      #{r.round_seq} <code>{r.round_id}</code>
                    </td>
                    <td>
                      <Badge status={r.status} />
                    </td>
                    <td>{r.step}</td>
                    <td>{r.intent.kind === "run" ? `${r.intent.intent} (${r.intent.strategy})` : r.intent.kind}</td>
                    <td>{"verdict" in r && r.verdict ? `${r.verdict.verdict}: ${r.verdict.reason}` : <span class="none">none</span>}</td>
                    <td>
                      {"ended_at" in r && r.ended_at ? (
                        <>
                          <Time at={r.ended_at} />
                          {"end_reason" in r && r.end_reason ? <> ({r.end_reason})</> : null}
                        </>
                      ) : (
                        <span class="none">running</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}

        <h2>Rejection telemetry</h2>
        {v.telemetry.rejections.total === 0 ? (
          <Empty>No candidate has been rejected yet.</Empty>
        ) : (
          <figure class="chart-figure" aria-labelledby="rej-caption">
            <figcaption id="rej-caption">Rejected candidates per gate ({v.telemetry.rejections.total} in all)</figcaption>
            <Bars
              id="rejection-chart"
              labels={gates.map(([g]) => g)}
              series={[{ label: "rejections", values: gates.map(([, t]) => t.count) }]}
              unit="count"
            />
            <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
              <table class="chart-table">
                <thead>
                  <tr>
                    <th scope="col">Gate</th>
                    <th scope="col">Rejections</th>
                    <th scope="col">Reasons</th>
                  </tr>
                </thead>
                <tbody>
                  {gates.map(([g, t]) => (
                    <tr>
                      <th scope="row">{g}</th>
                      <td>{t.count}</td>
                      <td>
                        {Object.entries(t.reasons)
                          .map(([reason, n]) => `${reason} ${n}`)
                          .join(", ")}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </figure>
        )}

        <h2 id="soul">SOUL versions</h2>
        <p>
          Current version {props.soul.current_version ?? <Unknown label="none" />} · at most {props.soul.max_backups} kept
        </p>
        {props.soul.versions.length === 0 ? (
          <Empty>No SOUL version kept.</Empty>
        ) : (
          <ul class="entries">
            {props.soul.versions.map((s) => (
              <li id={`soul-v${s.version}`} class="card" data-version={s.version}>
                <h3>
                  Version {s.version}
                  {s.current ? <strong> (current)</strong> : null} · {s.source}
                  {"status" in s && s.status ? (
                    <>
                      {" "}
                      <Badge status={String(s.status)} />
                    </>
                  ) : null}
                </h3>
                <p class="meta">
                  <Time at={s.created_at} /> by <code>{s.created_by}</code> · {s.bytes} bytes
                  {s.reason ? <> · {s.reason}</> : null}
                </p>
                {s.diff === null ? (
                  <p class="note">The version before it was pruned: no diff.</p>
                ) : (
                  <details open={s.current}>
                    <summary>Diff from {s.diff_from === 0 ? "nothing" : `version ${s.diff_from}`}</summary>
                    <Diff text={s.diff} />
                  </details>
                )}
              </li>
            ))}
          </ul>
        )}

        <h2>Configuration</h2>
        <Data value={v.config} />
      </section>
    </ConsolePage>
  );
}
