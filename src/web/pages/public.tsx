/** @jsxImportSource hono/jsx */
import type { councilOverview } from "../../council/views";
import type { checkAgainstPrinciples, queryPrinciples } from "../../council/principles";
import type { contributionView } from "../../projects/contributions";
import type { ProjectView } from "../../projects/store";
import type { TaskView } from "../../projects/swarm-tasks";
import { Badge, Data, Empty, FieldErrors, Num, Pct, ProblemNote, Time, Unknown, type FormProblem } from "../components/common";
import { isFinal, SessionTrail, type SessionDetail } from "../components/council";
import { Layout } from "../layout";

/** The public pages listen to the public stream: public event types only. */
export const PUBLIC_STREAM = "/v1/public/events/stream";

export interface NodeFacts {
  name: string;
  model_tier: number;
  reputation: number;
}

export interface CouncilPageProps {
  overview: Awaited<ReturnType<typeof councilOverview>>;
  nodes: Record<string, NodeFacts>;
  /** The full trail of the most recent sessions. */
  trails: SessionDetail[];
}

export function CouncilPage(props: CouncilPageProps) {
  const { term, members, sessions } = props.overview;
  return (
    <Layout title="The council" area="public" path="/council" stream={PUBLIC_STREAM}>
      <p>Every council record is public: who sits, what was said, how each member voted and with what weight, and what was decided.</p>
      <section id="council-term" aria-labelledby="term-h" data-live="council.">
        <h2 id="term-h">Current term</h2>
        {term ? (
          <p>
            Term {term.number} <Badge status={term.status} /> · started <Time at={term.started_at} /> · ends <Time at={term.ends_at} /> ·{" "}
            {term.session_count} session{term.session_count === 1 ? "" : "s"}
          </p>
        ) : (
          <Empty>No term is seated yet.</Empty>
        )}
        <h3>Members</h3>
        {members.length === 0 ? (
          <Empty>No members.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Name</th>
                  <th scope="col">Model tier</th>
                  <th scope="col">Reputation</th>
                  <th scope="col">Efficiency</th>
                </tr>
              </thead>
              <tbody>
                {members.map((m) => {
                  const n = props.nodes[m.node_id];
                  return (
                    <tr>
                      <td>
                        <code>{m.node_id}</code>
                      </td>
                      <td>{n?.name ?? <Unknown />}</td>
                      <td>{n ? <Num value={n.model_tier} /> : <Unknown />}</td>
                      <td>{n ? <Num value={n.reputation} /> : <Unknown />}</td>
                      <td>{m.efficiency === null ? <Unknown label="unknown (not asked yet)" /> : <Pct value={m.efficiency} />}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section id="council-sessions" aria-labelledby="sessions-h" data-live="council.">
        <h2 id="sessions-h">Sessions</h2>
        {sessions.length === 0 ? <Empty>No session yet.</Empty> : null}
        {props.trails.map((s) => (
          <article class="card" id={`session-${s.session_id}`} aria-labelledby={`h-${s.session_id}`}>
            <h3 id={`h-${s.session_id}`}>
              <a href={`/council/sessions/${s.session_id}`}>{s.proposal.title}</a>
            </h3>
            <SessionTrail s={s} headingLevel={3} />
          </article>
        ))}
        {sessions.length > props.trails.length ? (
          <>
            <h3>Earlier sessions</h3>
            <ul>
              {sessions.slice(props.trails.length).map((s) => (
                <li>
                  <a href={`/council/sessions/${s.session_id}`}>{s.title}</a> <Badge status={s.phase} kind="phase" />{" "}
                  {s.outcome ? <Badge status={s.outcome} kind="outcome" /> : null} <Time at={s.created_at} />
                </li>
              ))}
            </ul>
          </>
        ) : null}
      </section>
    </Layout>
  );
}

export function SessionPage(props: { s: SessionDetail }) {
  const s = props.s;
  return (
    <Layout title={s.proposal.title} area="public" path="/council" stream={PUBLIC_STREAM}>
      <p>
        <a href="/council">The council</a> › session <code>{s.session_id}</code>
        {isFinal(s.phase) ? "" : " (in progress: this page updates as the session moves)"}
      </p>
      <section id="session" data-live="council." aria-label="Session trail">
        <SessionTrail s={s} />
      </section>
    </Layout>
  );
}

type Principle = Awaited<ReturnType<typeof queryPrinciples>>[number];
type CheckResult = Awaited<ReturnType<typeof checkAgainstPrinciples>>;

export function PrinciplesPage(props: {
  principles: Principle[];
  q?: string;
  text?: string;
  check?: CheckResult;
  problem?: FormProblem | null;
}) {
  const textErrors = props.problem?.fields.text;
  return (
    <Layout title="Principles" area="public" path="/principles" stream={PUBLIC_STREAM}>
      <p>The rules the council approved with confidence. Check a text against them before you propose it.</p>
      <section aria-labelledby="check-h" id="check">
        <h2 id="check-h">Contradiction checker</h2>
        <form
          method="post"
          action="/principles/check"
          hx-post="/principles/check"
          hx-target="#check"
          hx-select="#check"
          hx-swap="outerHTML"
        >
          <ProblemNote problem={props.problem} />
          <label for="check-text">Text to check</label>
          <textarea
            id="check-text"
            name="text"
            rows={5}
            required
            maxlength={20000}
            aria-invalid={textErrors ? "true" : undefined}
            aria-describedby={textErrors ? "check-text-errors" : undefined}
          >
            {props.text ?? ""}
          </textarea>
          <FieldErrors id="check-text-errors" errors={textErrors} />
          <button type="submit">Check against the principles</button>
        </form>
        {props.check ? (
          <div class="result" role="status">
            <p>
              Highest overlap:{" "}
              <strong data-max-overlap={String(props.check.max_overlap)}>{(props.check.max_overlap * 100).toFixed(0)} %</strong> of the
              text's vocabulary is already in a principle.
            </p>
            {props.check.overlaps.length ? <Data value={props.check.overlaps} /> : <Empty>No principle shares its vocabulary.</Empty>}
          </div>
        ) : null}
      </section>
      <section id="principles" aria-labelledby="principles-h" data-live="governance.">
        <h2 id="principles-h">Active principles</h2>
        <form method="get" action="/principles" role="search">
          <label for="q">Search</label>
          <input id="q" name="q" type="search" value={props.q ?? ""} maxlength={500} />
          <button type="submit">Search</button>
        </form>
        {props.principles.length === 0 ? (
          <Empty>{props.q ? "No principle matches." : "No principle has crystallised yet."}</Empty>
        ) : (
          <ol class="principles">
            {props.principles.map((p) => (
              <li id={p.principle_id}>
                <p class="prose">{p.statement}</p>
                <p class="meta">
                  Confidence <Pct value={p.confidence} /> · from session{" "}
                  <a href={`/council/sessions/${p.source_session_id}`}>{p.source_session_id}</a> · <Time at={p.created_at} />
                  {"match" in p ? <> · match {String(p.match)}</> : null}
                </p>
              </li>
            ))}
          </ol>
        )}
      </section>
    </Layout>
  );
}

const LIFECYCLE = ["proposed", "council_review", "approved", "active", "completed", "archived"] as const;

function Lifecycle(props: { status: string }) {
  return (
    <ol class="lifecycle" aria-label="Lifecycle">
      {LIFECYCLE.map((s) => (
        <li aria-current={s === props.status ? "step" : undefined} class={s === props.status ? "current" : undefined}>
          {s.replaceAll("_", " ")}
        </li>
      ))}
    </ol>
  );
}

export function ProjectsPage(props: { projects: ProjectView[] }) {
  return (
    <Layout title="Official projects" area="public" path="/projects" stream={PUBLIC_STREAM}>
      <p>Projects the council approved, with their tasks and the nodes' contributions.</p>
      <section id="projects" data-live="project. swarm_task." aria-label="Projects">
        {props.projects.length === 0 ? (
          <Empty>No project yet.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Project</th>
                  <th scope="col">Status</th>
                  <th scope="col">Repository</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {props.projects.map((p) => (
                  <tr>
                    <td>
                      <a href={`/projects/${p.project_id}`}>{p.name}</a>
                    </td>
                    <td>
                      <Badge status={p.status} />
                    </td>
                    <td>
                      {p.repository?.url ? <a href={p.repository.url}>{p.repository.full_name}</a> : (p.repository?.state ?? "none yet")}
                    </td>
                    <td>
                      <Time at={p.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </Layout>
  );
}

type Contribution = ReturnType<typeof contributionView>;

export function ProjectPage(props: { project: ProjectView & { tasks: TaskView[] }; contributions: Contribution[] }) {
  const p = props.project;
  return (
    <Layout title={p.name} area="public" path="/projects" stream={PUBLIC_STREAM}>
      <p>
        <a href="/projects">Projects</a> › <code>{p.project_id}</code>
      </p>
      <section id="project" data-live="project. swarm_task." aria-label="Project">
        <p class="prose">{p.summary}</p>
        <Lifecycle status={p.status} />
        <p>
          Proposed by <code>{p.proposer_id}</code>
          {p.session_id ? (
            <>
              {" "}
              · council session <a href={`/council/sessions/${p.session_id}`}>{p.session_id}</a>
            </>
          ) : null}{" "}
          · updated <Time at={p.updated_at} />
        </p>
        <h2>Repository</h2>
        {p.repository ? (
          <p>
            <Badge status={p.repository.state} /> {p.repository.url ? <a href={p.repository.url}>{p.repository.full_name}</a> : null}
            {p.repository.reason ? <> ({p.repository.reason})</> : null}
          </p>
        ) : (
          <Empty>No repository yet (it is created when the project becomes active).</Empty>
        )}
        <h2>Decomposition</h2>
        {p.decomposition ? <Data value={p.decomposition} /> : <Empty>Not decomposed yet.</Empty>}
        <h2>Tasks ({p.tasks.length})</h2>
        {p.tasks.length === 0 ? (
          <Empty>No tasks yet.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Task</th>
                  <th scope="col">Status</th>
                  <th scope="col">Weight</th>
                  <th scope="col">Claimed by</th>
                  <th scope="col">Completed</th>
                  <th scope="col">Expires</th>
                </tr>
              </thead>
              <tbody>
                {p.tasks.map((t) => (
                  <tr id={t.task_id}>
                    <td>{t.seq ?? ""}</td>
                    <td>
                      {t.title}
                      <br />
                      <code>{t.task_id}</code>
                    </td>
                    <td>
                      <Badge status={t.status} />
                    </td>
                    <td>
                      <Num value={t.weight} />
                    </td>
                    <td>{t.claimed_by ? <code>{t.claimed_by}</code> : ""}</td>
                    <td>
                      {t.completed_by ? (
                        <>
                          <code>{t.completed_by}</code> <Time at={t.completed_at} />
                          {t.commit_sha ? (
                            <>
                              {" "}
                              commit <code>{t.commit_sha.slice(0, 12)}</code>
                            </>
                          ) : null}
                        </>
                      ) : (
                        ""
                      )}
                    </td>
                    <td>
                      <Time at={t.expires_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <h2>Contributions ({props.contributions.length})</h2>
        {props.contributions.length === 0 ? (
          <Empty>No contribution yet.</Empty>
        ) : (
          <ol class="contributions">
            {props.contributions.map((c) => (
              <li>
                <p class="meta">
                  <code>{c.node_id}</code> on <code>{c.branch}</code> · task {c.task_id ? <code>{c.task_id}</code> : "none"} ·{" "}
                  <Time at={c.created_at} />
                </p>
                <p>
                  Commit{" "}
                  {c.commit_url ? (
                    <a href={c.commit_url}>
                      <code>{(c.commit_sha ?? "").slice(0, 12)}</code>
                    </a>
                  ) : (
                    <code>{c.commit_sha ?? "pending"}</code>
                  )}
                  {c.pull_request ? (
                    <>
                      {" "}
                      · pull request <a href={c.pull_request.url ?? "#"}>#{c.pull_request.number}</a>
                    </>
                  ) : null}
                </p>
                <details>
                  <summary>Message with its attribution</summary>
                  <pre>{c.message}</pre>
                </details>
              </li>
            ))}
          </ol>
        )}
      </section>
    </Layout>
  );
}
