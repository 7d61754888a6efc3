/** @jsxImportSource hono/jsx */
import type { roleTurnsView } from "../../team/views";
import type { costByRole } from "../../team/ledger";
import type { taskView } from "../../tasks/view";
import type { TaskAttachmentsView } from "../../team/attachments";
import { Badge, Data, Empty, Num, Tabs, Time, Unknown, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";
import { CancelTaskSection, NewTaskSection, type AssigneeChoice, type TaskDraft } from "./console-task-form";

type Task = ReturnType<typeof taskView>;

export function TaskTable(props: { tasks: Task[] }) {
  if (props.tasks.length === 0) return <Empty>No task yet.</Empty>;
  return (
    <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
      <table>
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Assigned to</th>
            <th scope="col">Class</th>
            <th scope="col">Routed by</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {props.tasks.map((t) => (
            <tr>
              <td>
                <a href={`/console/tasks/${t.task_id}`}>{t.title}</a>
                <br />
                <code>{t.task_id}</code>
              </td>
              <td>
                <a href={`/console/employees/${t.assigned_to}`}>{t.assigned_to}</a>
              </td>
              <td>{t.task_class}</td>
              <td>{t.routed_by}</td>
              <td>
                <Badge status={t.status} />
                {"pause_class" in t && t.pause_class ? <> ({t.pause_class})</> : null}
              </td>
              <td>
                <Time at={t.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function TasksPage(props: {
  viewer: Viewer;
  tasks: Task[];
  /** Active employees the new-task form may address a task to. */
  employees: AssigneeChoice[];
  problem?: FormProblem | null;
  draft?: TaskDraft;
}) {
  return (
    <ConsolePage title="Tasks" path="/console/tasks" viewer={props.viewer}>
      <NewTaskSection viewer={props.viewer} employees={props.employees} problem={props.problem} draft={props.draft} />
      <section id="tasks" data-live="task. team. goal." aria-label="Recent tasks">
        <TaskTable tasks={props.tasks} />
      </section>
    </ConsolePage>
  );
}

/**
 * An accepted team goal's packet attachments (seed 002): each archived file with its download, each
 * refused name with its reason. Downloads go through the console's own route (the session, not a token).
 */
function AttachmentsSection(props: { taskId: string; archive: TaskAttachmentsView }) {
  const a = props.archive;
  const href = (path: string) => `/console/tasks/${encodeURIComponent(props.taskId)}/attachment?${new URLSearchParams({ path })}`;
  return (
    <section id="attachments" aria-label="Attachments">
      <h2>Attachments</h2>
      <p>
        Round {a.round} named {a.named.length} {a.named.length === 1 ? "file" : "files"} · <Badge status={a.status} />
        {a.error ? <> ({a.error.code})</> : null}
      </p>
      {a.status === "pending" ? <Empty>The runner has not archived them yet.</Empty> : null}
      {a.archived && a.archived.length ? (
        <ul>
          {a.archived.map((f) => (
            <li>
              <a href={href(f.path)} download>
                {f.path}
              </a>{" "}
              · <Num value={f.bytes} /> B · sha256 <code class="hash">{f.sha256.slice(0, 12)}…</code>
              {f.declared !== f.path ? <> (named {f.declared})</> : null}
            </li>
          ))}
        </ul>
      ) : a.status === "archived" ? (
        <Empty>Nothing was archived.</Empty>
      ) : null}
      {a.refused && a.refused.length ? (
        <>
          <h3>Refused ({a.refused.length})</h3>
          <ul>
            {a.refused.map((r) => (
              <li>
                <code>{r.declared}</code>: {r.reason}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}

function TaskTabs(props: { id: string; tab: "overview" | "roles" }) {
  return (
    <Tabs
      label="Task"
      tabs={[
        { href: `/console/tasks/${props.id}`, label: "Overview", current: props.tab === "overview" },
        { href: `/console/tasks/${props.id}/roles`, label: "Roles", current: props.tab === "roles" },
      ]}
    />
  );
}

/** `GET /v1/tasks/:id` as a page: the task, its goal loop, and the team's spec, gate and rounds. */
export function TaskPage(props: { viewer: Viewer; task: Task & Record<string, unknown>; cancelProblem?: FormProblem | null }) {
  const t = props.task;
  const { task_id, title, role_turns: _turns, goal_loop, team_spec, gate, rounds, team_budget, team_refused, attachments, ...rest } = t;
  return (
    <ConsolePage title={title} path="/console/tasks" viewer={props.viewer}>
      <p>
        <a href="/console/tasks">Tasks</a> › <code>{task_id}</code>
      </p>
      <TaskTabs id={task_id} tab="overview" />
      <section id="task" data-live="task. team. goal." aria-label="Task">
        <p>
          <Badge status={t.status} /> · assigned to <a href={`/console/employees/${t.assigned_to}`}>{t.assigned_to}</a> (routed by{" "}
          {t.routed_by}) · created <Time at={t.created_at} />
        </p>
        <CancelTaskSection viewer={props.viewer} taskId={task_id} status={t.status} problem={props.cancelProblem} />
        <h2>Task</h2>
        <Data value={rest} />
        <h2>Goal loop</h2>
        {goal_loop ? <Data value={goal_loop} /> : <Empty>Not worked by the goal loop (a manual task).</Empty>}
        {gate || team_spec || team_refused ? (
          <>
            <h2>Team</h2>
            <Data value={{ gate, team_spec, team_refused, team_budget }} />
          </>
        ) : null}
        {attachments ? <AttachmentsSection taskId={task_id} archive={attachments as TaskAttachmentsView} /> : null}
        {Array.isArray(rounds) && rounds.length ? (
          <>
            <h2>Rounds ({rounds.length})</h2>
            <Data value={rounds} />
          </>
        ) : null}
      </section>
    </ConsolePage>
  );
}

type RoleTurns = Awaited<ReturnType<typeof roleTurnsView>>;
type CostRows = Awaited<ReturnType<typeof costByRole>>;

function Usage(props: { usage: unknown }) {
  if (props.usage === "unknown" || props.usage === undefined) return <Unknown />;
  return <Data value={props.usage} />;
}

/** The roles tab: every role turn of the task, its packets and receipts, the chain check, and spend by role. */
export function RolesPage(props: { viewer: Viewer; taskId: string; title: string; roles: RoleTurns; cost: CostRows }) {
  const turns = props.roles.role_turns;
  return (
    <ConsolePage title={`${props.title}: roles`} path="/console/tasks" viewer={props.viewer}>
      <p>
        <a href="/console/tasks">Tasks</a> › <code>{props.taskId}</code>
      </p>
      <TaskTabs id={props.taskId} tab="roles" />
      <section id="roles" data-live="task. team." aria-label="Role turns">
        <p>
          Ledger chain:{" "}
          {props.roles.chain.ok ? (
            <strong class="ok">verifies</strong>
          ) : (
            <strong class="bad">broken at seq {"broken_at_seq" in props.roles.chain ? props.roles.chain.broken_at_seq : "?"}</strong>
          )}
        </p>
        <h2>Role turns ({turns.length})</h2>
        {turns.length === 0 ? (
          <Empty>No role turn yet (a solo round records none).</Empty>
        ) : (
          <ol class="turns">
            {turns.map((r) => (
              <li id={`turn-${r.seq}`}>
                <h3>
                  #{r.seq} round {r.round} · {r.role} · {r.stage} <Badge status={String(r.outcome ?? "running")} />
                </h3>
                <p>
                  Asked for {r.requested_runtime}/{r.request_model} · ran {r.runtime_used ?? <Unknown />}/{r.response_model ?? <Unknown />}{" "}
                  · provider {r.provider ?? <Unknown />} · evidence {String(r.evidence_grade ?? "")}
                  {r.failure_edge ? (
                    <>
                      {" "}
                      · failed at {r.failure_edge} ({r.fault_side})
                    </>
                  ) : null}
                </p>
                <p>
                  Usage: {"usage" in r ? <Usage usage={r.usage} /> : <Unknown />} · cost{" "}
                  {"cost_usd" in r ? <Num value={r.cost_usd as number} digits={4} /> : <Unknown />}
                </p>
                <details>
                  <summary>Packets and receipts</summary>
                  <Data value={r.packets} />
                </details>
                <p class="meta">
                  <Time at={r.created_at} /> · hash <code class="hash">{r.hash}</code>
                </p>
              </li>
            ))}
          </ol>
        )}
        <h2>Cost by role</h2>
        {props.cost.length === 0 ? (
          <Empty>No spend recorded.</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Role</th>
                  <th scope="col">Runtime / model</th>
                  <th scope="col">Stages</th>
                  <th scope="col">Usage</th>
                  <th scope="col">Cost (USD)</th>
                </tr>
              </thead>
              <tbody>
                {props.cost.map((c) => (
                  <tr>
                    <td>{c.role}</td>
                    <td>
                      {c.runtime} / {c.model}
                    </td>
                    <td>
                      {c.stages}
                      {c.stages_without_usage ? <> ({c.stages_without_usage} without usage)</> : null}
                    </td>
                    <td>
                      <Usage usage={c.usage} />
                    </td>
                    <td>
                      {c.cost_usd === "unknown" ? <Unknown /> : <Num value={c.cost_usd as number | null} digits={4} />}
                      {c.stages_without_cost && c.cost_usd !== "unknown" ? <> ({c.stages_without_cost} stages unknown)</> : null}
                    </td>
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
