/** @jsxImportSource hono/jsx */
import type { EventView } from "../../lib/events";
import { Csrf, Data, Empty, FieldErrors, ProblemNote, Time, Unknown, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import type { FirstRun } from "../../console/first-run";
import { ConsolePage } from "./console-shell";
import { GetStarted } from "./console-get-started";

/** The activity feed: the newest events, live. */
export function ActivityPage(props: {
  viewer: Viewer;
  events: EventView[];
  type?: string;
  problem?: FormProblem | null;
  /** The "Get started" panel's state and the console's origin, while its steps are not all done. */
  firstRun?: { state: FirstRun; origin: string } | null;
}) {
  const typeErrors = props.problem?.fields.type;
  return (
    <ConsolePage title="Activity" path="/console" viewer={props.viewer}>
      {props.firstRun ? <GetStarted state={props.firstRun.state} viewer={props.viewer} origin={props.firstRun.origin} /> : null}
      <form method="get" action="/console" role="search">
        <label for="type">Event type prefix</label>
        <input
          id="type"
          name="type"
          value={props.type ?? ""}
          placeholder="approval."
          maxlength={100}
          aria-invalid={typeErrors ? "true" : undefined}
          aria-describedby={typeErrors ? "type-errors" : undefined}
        />
        <FieldErrors id="type-errors" errors={typeErrors} />
        <button type="submit">Filter</button>
      </form>
      <section id="activity" data-live={props.type ?? ""} aria-label="Newest events">
        {props.events.length === 0 ? (
          <Empty>Nothing has happened yet.</Empty>
        ) : (
          <ol class="feed" reversed>
            {props.events.map((e) => (
              <li id={`event-${e.id}`} data-type={e.type}>
                <p class="meta">
                  <strong>{e.type}</strong> {e.subject ? <code>{e.subject}</code> : null} · <Time at={e.created_at} /> · #{e.id}
                </p>
                <details>
                  <summary>Details</summary>
                  <Data value={e.payload} />
                </details>
              </li>
            ))}
          </ol>
        )}
      </section>
    </ConsolePage>
  );
}

export interface RunnerRow {
  runner_id: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
  last_poll_at: string | null;
  leased_jobs: number;
}

/** A runner token just minted: shown on this one response, never again. */
export interface CreatedRunner {
  runner_id: string;
  name: string;
  token: string;
}

export function RunnersPage(props: {
  viewer: Viewer;
  runners: RunnerRow[];
  /** The console's origin, for the commands a person copies. */
  origin: string;
  created?: CreatedRunner | null;
  problem?: FormProblem | null;
  draftName?: string;
}) {
  const nameErrors = props.problem?.fields.name;
  return (
    <ConsolePage title="Runner fleet" path="/console/runners" viewer={props.viewer}>
      {props.created ? <NewRunnerToken created={props.created} origin={props.origin} /> : null}
      {props.viewer.role === "admin" ? (
        <form method="post" action="/console/runners" id="runner-create" class="card">
          <h2>New runner token</h2>
          <Csrf token={props.viewer.csrf} />
          <ProblemNote problem={props.problem} />
          <label for="runner-name">Name</label>
          <input
            id="runner-name"
            name="name"
            required
            maxlength={100}
            value={props.draftName ?? ""}
            placeholder="laptop"
            aria-invalid={nameErrors ? "true" : undefined}
            aria-describedby={nameErrors ? "runner-name-hint runner-name-errors" : "runner-name-hint"}
          />
          <p class="meta" id="runner-name-hint">
            Where the runner runs, so you can tell runners apart. The token is shown once, on the next page.
          </p>
          <FieldErrors id="runner-name-errors" errors={nameErrors} />
          <button type="submit">Create the token</button>
        </form>
      ) : null}
      <section id="runners" data-live="runner. job." aria-label="Runners">
        {props.runners.length === 0 ? (
          <Empty>No runner token yet{props.viewer.role === "admin" ? " (the form above makes one)" : " (an admin makes one here)"}.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Runner</th>
                  <th scope="col">Last poll</th>
                  <th scope="col">Held jobs</th>
                  <th scope="col">Created</th>
                  <th scope="col">Revoked</th>
                </tr>
              </thead>
              <tbody>
                {props.runners.map((r) => (
                  <tr data-runner={r.runner_id}>
                    <td>
                      {r.name}
                      <br />
                      <code>{r.runner_id}</code>
                    </td>
                    <td>{r.last_poll_at ? <Time at={r.last_poll_at} /> : <Unknown label="never polled" />}</td>
                    <td>{r.leased_jobs}</td>
                    <td>
                      <Time at={r.created_at} />
                    </td>
                    <td>{r.revoked_at ? <Time at={r.revoked_at} /> : "live"}</td>
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

function NewRunnerToken(props: { created: CreatedRunner; origin: string }) {
  const c = props.created;
  return (
    <section id="runner-created" class="card" role="status" aria-labelledby="runner-created-h">
      <h2 id="runner-created-h">Runner token for {c.name}</h2>
      <p>
        Copy it now: it is shown only on this page. The runner is <code>{c.runner_id}</code>.
      </p>
      <pre>
        <code id="runner-token">{c.token}</code>
      </pre>
      <p>Run the runner with it, from a checkout of crewplane on the machine that has the model CLIs:</p>
      <pre>
        <code>{`CREWPLANE_RUNNER_TOKEN=${c.token} local-runner/bin/crewplane-runner --url ${props.origin}`}</code>
      </pre>
      <p>Or install it as a service that reads the token from a file only you can read, and check it:</p>
      <pre>
        <code>
          {`CREWPLANE_RUNNER_TOKEN=${c.token} local-runner/bin/crewplane-runner install-service --url ${props.origin}\n`}
          {`local-runner/bin/crewplane-runner doctor --url ${props.origin} --token-file ~/.config/crewplane/runner-token`}
        </code>
      </pre>
    </section>
  );
}

export function AuditPage(props: { viewer: Viewer; status: unknown }) {
  return (
    <ConsolePage title="Audit trail" path="/console/audit" viewer={props.viewer}>
      <p>
        Every event is sealed into one hash chain and its head is signed; anyone can verify an export offline with{" "}
        <code>npx crewplane-audit verify</code>.
      </p>
      <ul>
        <li>
          <a href="/v1/public/audit/export">Public export</a> (the public events; the rest as hashes only)
        </li>
        <li>
          <a href="/.well-known/crewplane-audit-keys">Checkpoint keys</a>
        </li>
        {props.viewer.role === "admin" ? <li>The full export is an admin's API call: GET /v1/audit/export with an admin token.</li> : null}
      </ul>
      <section id="audit" data-live="" aria-label="Sealer status">
        <h2>Sealer status</h2>
        <Data value={props.status} />
      </section>
    </ConsolePage>
  );
}
