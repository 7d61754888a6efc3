/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import type { FirstRun } from "../../console/first-run";
import { Time } from "../components/common";
import type { Viewer } from "../layout";

function Step(props: { n: number; done: boolean; title: string; children?: Child }) {
  return (
    <li data-step={props.n} data-done={props.done ? "true" : "false"}>
      <p>
        <strong>{props.title}</strong> <span class={props.done ? "ok" : "note"}>{props.done ? "✔ done" : "○ not yet"}</span>
      </p>
      {props.children}
    </li>
  );
}

/**
 * "Get started": the four first steps of an empty install, each done or not from the real state
 * (a live runner, an employee, a goal, a round that ended). `origin` is the console's own, for the
 * runner command a person copies.
 */
export function GetStarted(props: { state: FirstRun; viewer: Viewer; origin: string }) {
  const s = props.state;
  const manager = props.viewer.role !== "viewer";
  return (
    <section id="get-started" class="card" aria-labelledby="get-started-h" data-live="runner. employee. task. team.">
      <h2 id="get-started-h">Get started</h2>
      <ol>
        <Step n={1} done={s.runners.length > 0} title="Connect a runner">
          {s.runners.length > 0 ? (
            <ul>
              {s.runners.map((r) => (
                <li>
                  {r.name} <code>{r.runner_id}</code> · last asked for work <Time at={r.last_poll_at} />
                </li>
              ))}
            </ul>
          ) : (
            <>
              <p>
                No runner asked for work in the last ten minutes. On this machine, <code>npm start</code> starts one next to the Worker. On
                another host, run one with a runner token:
              </p>
              <p>
                {props.viewer.role === "admin" ? (
                  <a href="/console/runners#runner-create">Create a runner token</a>
                ) : (
                  "An admin creates a runner token on the runner fleet page"
                )}
                , then on the host, from a checkout of crewplane:
              </p>
              <pre>
                <code>{`CREWPLANE_RUNNER_TOKEN=<runner token> local-runner/bin/crewplane-runner --url ${props.origin}`}</code>
              </pre>
              <p>
                See <a href="/console/runners">the runner fleet</a>.
              </p>
            </>
          )}
        </Step>
        <Step n={2} done={s.employees > 0} title="Create your first employee">
          {s.employees > 0 ? (
            <p>
              {s.employees} on <a href="/console/employees">the employees page</a>.
            </p>
          ) : manager ? (
            <p>
              <a href="/console/employees/new">New employee</a>: a name, a runtime a runner offers, a model.
            </p>
          ) : (
            <p class="note">Creating an employee needs the manager role.</p>
          )}
        </Step>
        <Step n={3} done={s.goals > 0} title="Give it a goal">
          <p>On the employee's page: a title and acceptance criteria, one per line.</p>
        </Step>
        <Step n={4} done={s.roundsEnded > 0} title="Watch its rounds">
          <p>
            {s.firstGoal ? (
              <>
                <a href={`/console/tasks/${s.firstGoal}`}>The first goal</a> ·{" "}
              </>
            ) : null}
            <a href="/console/tasks">All tasks</a>: each round, its outcome and what waits for a person.
          </p>
        </Step>
      </ol>
    </section>
  );
}
