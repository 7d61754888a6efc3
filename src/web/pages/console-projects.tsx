/** @jsxImportSource hono/jsx */
import { DECOMPOSITION_RULES } from "../../projects/decomposition";
import type { ProjectView } from "../../projects/store";
import type { TaskView } from "../../projects/swarm-tasks";
import { Badge, Csrf, Empty, FieldErrors, Num, ProblemNote, Time, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

/** One row per task the rules allow; the first three are open. */
export const DECOMPOSITION_ROWS = DECOMPOSITION_RULES.maxTasks;
const { minTasks, maxTasks, maxWeightSum } = DECOMPOSITION_RULES;
const OPEN_ROWS = 3;

/** A refused verify, shown on its task's row. */
export type VerifyProblem = { taskId: string; problem: FormProblem } | null;

function VerifyCell(props: { task: TaskView; viewer: Viewer; back: string; problem: VerifyProblem }) {
  const t = props.task;
  const problem = props.problem?.taskId === t.task_id ? props.problem.problem : null;
  if (t.verified_at)
    return (
      <>
        <ProblemNote problem={problem} />
        <span>
          verified by <code>{t.verified_by}</code> <Time at={t.verified_at} />
        </span>
      </>
    );
  if (t.status !== "completed") return null;
  if (props.viewer.role === "viewer") return <span class="meta">awaits a manager's verification</span>;
  return (
    <>
      <ProblemNote problem={problem} />
      <form method="post" action={`/console/swarm/tasks/${t.task_id}/verify`} class="inline">
        <Csrf token={props.viewer.csrf} />
        <input type="hidden" name="back" value={props.back} />
        <button type="submit">Verify the work</button>
      </form>
    </>
  );
}

function TaskTable(props: { tasks: TaskView[]; viewer: Viewer; back: string; problem: VerifyProblem; showProject?: boolean }) {
  return (
    <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
      <table>
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Status</th>
            <th scope="col">Weight</th>
            <th scope="col">Completed</th>
            <th scope="col">Verification</th>
          </tr>
        </thead>
        <tbody>
          {props.tasks.map((t) => (
            <tr id={`swarm-${t.task_id}`} data-task={t.task_id}>
              <td>
                {t.title}
                <br />
                <code>{t.task_id}</code>
                {props.showProject && t.project_id ? (
                  <>
                    {" "}
                    · <a href={`/console/projects/${t.project_id}`}>{t.project_id}</a>
                  </>
                ) : null}
              </td>
              <td>
                <Badge status={t.status} />
              </td>
              <td>
                <Num value={t.weight} />
              </td>
              <td>
                {t.completed_by ? (
                  <>
                    <code>{t.completed_by}</code> <Time at={t.completed_at} />
                    {t.summary ? <p class="prose">{t.summary}</p> : null}
                  </>
                ) : null}
              </td>
              <td>
                <VerifyCell task={t} viewer={props.viewer} back={props.back} problem={props.problem} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** `/console/projects`: the official projects, and the swarm work that waits for a manager's verification. */
export function ConsoleProjectsPage(props: {
  viewer: Viewer;
  projects: ProjectView[];
  awaiting: TaskView[];
  verifyProblem?: VerifyProblem;
}) {
  return (
    <ConsolePage title="Projects" path="/console/projects" viewer={props.viewer}>
      <p>
        Official projects come from the council (an approved proposal); here a manager moves them through their lifecycle, gives an approved
        one its tasks, and verifies the swarm's finished work. The public view is <a href="/projects">/projects</a>.
      </p>
      <section id="console-projects" data-live="project." aria-label="Projects">
        {props.projects.length === 0 ? (
          <Empty>No project yet: one appears when the council approves a project proposal.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Project</th>
                  <th scope="col">Status</th>
                  <th scope="col">Decomposition</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {props.projects.map((p) => (
                  <tr data-project={p.project_id}>
                    <td>
                      <a href={`/console/projects/${p.project_id}`}>{p.name}</a>
                      <br />
                      <code>{p.project_id}</code>
                    </td>
                    <td>
                      <Badge status={p.status} />
                    </td>
                    <td>{p.decomposition ? <Badge status={p.decomposition.state} /> : <span class="none">none yet</span>}</td>
                    <td>
                      <Time at={p.updated_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section id="swarm-awaiting" data-live="swarm_task." aria-labelledby="awaiting-h">
        <h2 id="awaiting-h">Finished work awaiting verification</h2>
        {props.awaiting.length === 0 ? (
          <Empty>Nothing waits: no completed swarm task is unverified.</Empty>
        ) : (
          <TaskTable
            tasks={props.awaiting}
            viewer={props.viewer}
            back="/console/projects"
            problem={props.verifyProblem ?? null}
            showProject
          />
        )}
      </section>
    </ConsolePage>
  );
}

/** The decomposition form's fields as typed, by input name (`tasks.0.title`…). */
export type DecompositionDraft = Record<string, string>;

function DecompositionForm(props: { projectId: string; viewer: Viewer; problem: FormProblem | null; draft: DecompositionDraft }) {
  const p = props.problem;
  const d = props.draft;
  const row = (i: number) => {
    const input = (key: "title" | "signals" | "weight", label: string, extra: Record<string, unknown>) => {
      const name = `tasks.${i}.${key}`;
      const id = `decomp-${i}-${key}`;
      const errors = p?.fields[name];
      return (
        <>
          <label for={id}>{label}</label>
          <input
            id={id}
            name={name}
            value={d[name] ?? ""}
            aria-invalid={errors ? "true" : undefined}
            aria-describedby={errors ? `${id}-errors` : undefined}
            {...extra}
          />
          <FieldErrors id={`${id}-errors`} errors={errors} />
        </>
      );
    };
    const bodyName = `tasks.${i}.body`;
    const bodyErrors = p?.fields[bodyName];
    const rowErrors = p?.fields[`tasks.${i}`];
    return (
      <fieldset id={`decomp-task-${i}`}>
        <legend>Task {i + 1}</legend>
        <FieldErrors id={`decomp-${i}-errors`} errors={rowErrors} />
        {input("title", "Title", { maxlength: 200 })}
        {input("signals", "Signals, comma-separated", { maxlength: 800 })}
        {input("weight", "Weight", { type: "number", step: "any", min: "0", max: String(maxWeightSum) })}
        <label for={`decomp-${i}-body`}>What done looks like (optional)</label>
        <textarea
          id={`decomp-${i}-body`}
          name={bodyName}
          rows={2}
          maxlength={4000}
          aria-invalid={bodyErrors ? "true" : undefined}
          aria-describedby={bodyErrors ? `decomp-${i}-body-errors` : undefined}
        >
          {d[bodyName] ?? ""}
        </textarea>
        <FieldErrors id={`decomp-${i}-body-errors`} errors={bodyErrors} />
      </fieldset>
    );
  };
  const rows = Array.from({ length: DECOMPOSITION_ROWS }, (_, i) => i);
  const moreOpen = rows
    .slice(OPEN_ROWS)
    .some((i) => ["title", "signals", "weight", "body"].some((k) => (d[`tasks.${i}.${k}`] ?? "") !== ""));
  return (
    <form method="post" action={`/console/projects/${props.projectId}/decomposition`} id="decomposition-form">
      <Csrf token={props.viewer.csrf} />
      <ProblemNote problem={p} />
      <p class="meta">
        {minTasks} to {maxTasks} tasks with distinct titles; each weight above 0, all of them together at most {maxWeightSum} (the solvers'
        share; the proposer and the aggregator get the rest). Rows left empty are skipped. Submitting makes the project active and opens its
        tasks to the swarm; the model's own decomposition, if one is under way, is set aside.
      </p>
      {rows.slice(0, OPEN_ROWS).map(row)}
      <details open={moreOpen}>
        <summary>More tasks (up to {DECOMPOSITION_ROWS})</summary>
        {rows.slice(OPEN_ROWS).map(row)}
      </details>
      <button type="submit">Submit the decomposition</button>
    </form>
  );
}

/** `/console/projects/:id`: a project's state, its tasks, and the manager's moves on it. */
export function ConsoleProjectPage(props: {
  viewer: Viewer;
  project: ProjectView & { tasks: TaskView[] };
  /** The statuses a manager may move it to now. */
  targets: string[];
  moveProblem?: FormProblem | null;
  decompositionProblem?: FormProblem | null;
  decompositionDraft?: DecompositionDraft;
  verifyProblem?: VerifyProblem;
}) {
  const p = props.project;
  const manager = props.viewer.role !== "viewer";
  const back = `/console/projects/${p.project_id}`;
  return (
    <ConsolePage title={p.name} path="/console/projects" viewer={props.viewer}>
      <p>
        <a href="/console/projects">Projects</a> › <code>{p.project_id}</code> · <a href={`/projects/${p.project_id}`}>public page</a>
      </p>
      <section id="project-state" data-live="project." aria-labelledby="project-state-h">
        <h2 id="project-state-h">State</h2>
        <p class="prose">{p.summary}</p>
        <p>
          <Badge status={p.status} /> · proposed by <code>{p.proposer_id}</code>
          {p.session_id ? (
            <>
              {" "}
              · council session <a href={`/council/sessions/${p.session_id}`}>{p.session_id}</a>
            </>
          ) : null}{" "}
          · updated <Time at={p.updated_at} />
        </p>
        <p>
          Repository:{" "}
          {p.repository ? (
            <>
              <Badge status={p.repository.state} /> {p.repository.url ? <a href={p.repository.url}>{p.repository.full_name}</a> : null}
              {p.repository.reason ? <> ({p.repository.reason})</> : null}
            </>
          ) : (
            <span class="none">none yet (created when the project becomes active)</span>
          )}
        </p>
        <p>
          Decomposition:{" "}
          {p.decomposition ? (
            <>
              <Badge status={p.decomposition.state} /> by {p.decomposition.source ?? "the model"}
              {p.decomposition.attempts > 0 ? <>, {p.decomposition.attempts} model attempt(s)</> : null}
              {p.decomposition.reason ? (
                <>
                  {" "}
                  · <code>{p.decomposition.reason}</code> {p.decomposition.detail}
                </>
              ) : null}
            </>
          ) : (
            <span class="none">not started</span>
          )}
        </p>
        {manager ? (
          props.targets.length === 0 ? (
            <p class="note">A manager has no move from {p.status}: the council or the decomposition moves it on.</p>
          ) : (
            <form method="post" action={`/console/projects/${p.project_id}/transition`} id="project-move">
              <Csrf token={props.viewer.csrf} />
              <ProblemNote problem={props.moveProblem} />
              <label for="project-to">Move to</label>
              <select id="project-to" name="to">
                {props.targets.map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
              <button type="submit">Move the project</button>
            </form>
          )
        ) : null}
      </section>
      {manager && p.status === "approved" ? (
        <section id="project-decomposition" aria-labelledby="decomp-h">
          <h2 id="decomp-h">Give it its tasks</h2>
          <DecompositionForm
            projectId={p.project_id}
            viewer={props.viewer}
            problem={props.decompositionProblem ?? null}
            draft={props.decompositionDraft ?? {}}
          />
        </section>
      ) : null}
      <section id="project-tasks" data-live="swarm_task." aria-labelledby="project-tasks-h">
        <h2 id="project-tasks-h">Swarm tasks ({p.tasks.length})</h2>
        {p.tasks.length === 0 ? (
          <Empty>No task yet.</Empty>
        ) : (
          <TaskTable tasks={p.tasks} viewer={props.viewer} back={back} problem={props.verifyProblem ?? null} />
        )}
      </section>
    </ConsolePage>
  );
}
