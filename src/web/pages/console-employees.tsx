/** @jsxImportSource hono/jsx */
import type { EmployeeSeries } from "../../console/employee-series";
import type { employeeConversations } from "../../console/lists";
import type { memoryView } from "../../knowledge/memory";
import type { wikiView } from "../../knowledge/wiki";
import type { employeeView } from "../../tasks/employees";
import type { taskView } from "../../tasks/view";
import type { goalLoopView } from "../../team/goal-loop";
import { Badge, Csrf, Data, Empty, FieldErrors, Num, ProblemNote, Tabs, Time, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";
import { EmployeePlots } from "./console-employee-plots";
import { GetStarted } from "./console-get-started";
import { GoalSection, type GoalDraft } from "./console-goal-form";
import { TaskTable } from "./console-tasks";
import type { FirstRun } from "../../console/first-run";

type Employee = ReturnType<typeof employeeView>;

interface TreeNode {
  e: Employee;
  children: TreeNode[];
}

/** The forest `reports_to` forms (an unknown parent makes a root, so nobody is hidden). */
export function forest(list: Employee[]): TreeNode[] {
  const nodes = new Map(list.map((e) => [e.employee_id, { e, children: [] as TreeNode[] }]));
  const roots: TreeNode[] = [];
  for (const n of nodes.values()) {
    const parent = n.e.reports_to ? nodes.get(n.e.reports_to) : undefined;
    (parent ? parent.children : roots).push(n);
  }
  return roots;
}

function Branch(props: { nodes: TreeNode[] }) {
  return (
    <ul class="tree">
      {props.nodes.map((n) => (
        <li>
          <a href={`/console/employees/${n.e.employee_id}`}>{n.e.name}</a> <code>{n.e.employee_id}</code> · {n.e.runtime} /{" "}
          {n.e.model.preferred}
          {n.e.status !== "active" ? (
            <>
              {" "}
              <Badge status={n.e.status} />
            </>
          ) : null}
          {n.children.length ? <Branch nodes={n.children} /> : null}
        </li>
      ))}
    </ul>
  );
}

export function EmployeesPage(props: {
  viewer: Viewer;
  employees: Employee[];
  /** The "Get started" panel's state and the console's origin, while its steps are not all done. */
  firstRun?: { state: FirstRun; origin: string } | null;
}) {
  return (
    <ConsolePage title="Employees" path="/console/employees" viewer={props.viewer}>
      {props.firstRun ? <GetStarted state={props.firstRun.state} viewer={props.viewer} origin={props.firstRun.origin} /> : null}
      {props.viewer.role !== "viewer" ? (
        <p>
          <a href="/console/employees/new">New employee</a>
        </p>
      ) : null}
      <section id="employees" data-live="employee." aria-label="The org">
        {props.employees.length === 0 ? <Empty>No employee yet.</Empty> : <Branch nodes={forest(props.employees)} />}
      </section>
    </ConsolePage>
  );
}

export type EmployeeTab = "overview" | "memory" | "wiki" | "learning" | "skills";

export function EmployeeTabs(props: { id: string; tab: EmployeeTab }) {
  const base = `/console/employees/${props.id}`;
  return (
    <Tabs
      label="Employee"
      tabs={[
        { href: base, label: "Overview", current: props.tab === "overview" },
        { href: `${base}/memory`, label: "Memory", current: props.tab === "memory" },
        { href: `${base}/wiki`, label: "Wiki", current: props.tab === "wiki" },
        { href: `${base}/learning`, label: "Learning", current: props.tab === "learning" },
        { href: `${base}/skills`, label: "Skills", current: props.tab === "skills" },
      ]}
    />
  );
}

type Conversation = Awaited<ReturnType<typeof employeeConversations>>[number];
type TaskRow = ReturnType<typeof taskView>;
type OpenGoal = { task: TaskRow; loop: Awaited<ReturnType<typeof goalLoopView>> };

/** The employee's open goals, each with its loop: rounds used of the budget, the round in flight, the last evaluation. */
function OpenGoals(props: { goals: OpenGoal[] }) {
  return (
    <section aria-labelledby="goals-h" id="employee-goals" data-live="task. team. goal.">
      <h2 id="goals-h">Open goals</h2>
      {props.goals.length === 0 ? (
        <Empty>No open goal.</Empty>
      ) : (
        <ul class="goals">
          {props.goals.map(({ task, loop }) => (
            <li data-goal={task.task_id}>
              <a href={`/console/tasks/${task.task_id}`}>{task.title}</a>{" "}
              {loop.manual ? null : (
                <>
                  <Badge status={loop.state} /> · round {loop.rounds_used} of {loop.rounds_budget}
                  {loop.current_round ? (
                    <>
                      {" "}
                      (round {loop.current_round.round}, {loop.current_round.mode}, {loop.current_round.phase})
                    </>
                  ) : null}
                  {loop.last_evaluation ? (
                    <>
                      {" "}
                      · last evaluation: {loop.last_evaluation.met} of {loop.last_evaluation.of} criteria met
                    </>
                  ) : null}{" "}
                  · <a href={`/console/tasks/${task.task_id}/roles`}>role turns and cost</a>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function EmployeePage(props: {
  viewer: Viewer;
  employee: Employee & { team?: unknown };
  conversations: Conversation[];
  tasks: TaskRow[];
  goals: OpenGoal[];
  /** Cost and prediction error per day (the plots). */
  series: EmployeeSeries;
  canTalk: boolean;
  problem?: FormProblem | null;
  userId?: string;
  lifecycleProblem?: FormProblem | null;
  goalProblem?: FormProblem | null;
  goalDraft?: GoalDraft;
}) {
  const e = props.employee;
  const userErrors = props.problem?.fields.user_id;
  return (
    <ConsolePage title={e.name} path="/console/employees" viewer={props.viewer}>
      <p>
        <a href="/console/employees">Employees</a> › <code>{e.employee_id}</code>
      </p>
      <EmployeeTabs id={e.employee_id} tab="overview" />
      <Lifecycle employee={e} viewer={props.viewer} problem={props.lifecycleProblem ?? null} />
      <GoalSection employeeId={e.employee_id} status={e.status} viewer={props.viewer} problem={props.goalProblem} draft={props.goalDraft} />
      <OpenGoals goals={props.goals} />
      <section aria-labelledby="conv-h" id="employee-conversations" data-live="conversation.">
        <h2 id="conv-h">Conversations</h2>
        {props.canTalk ? (
          <form method="post" action={`/console/employees/${e.employee_id}/conversations`}>
            <Csrf token={props.viewer.csrf} />
            <ProblemNote problem={props.problem} />
            <label for="user-id">Talk as user</label>
            <input
              id="user-id"
              name="user_id"
              required
              value={props.userId ?? props.viewer.name}
              aria-invalid={userErrors ? "true" : undefined}
              aria-describedby={userErrors ? "user-id-errors" : undefined}
            />
            <FieldErrors id="user-id-errors" errors={userErrors} />
            <button type="submit">Start a conversation</button>
          </form>
        ) : (
          <p class="note">Starting a conversation needs the manager role.</p>
        )}
        {props.conversations.length === 0 ? (
          <Empty>No conversation yet.</Empty>
        ) : (
          <ul>
            {props.conversations.map((c) => (
              <li>
                <a href={`/console/conversations/${c.conversation_id}`}>{c.conversation_id}</a> with <code>{c.user_id}</code>{" "}
                <Badge status={c.status} /> · last activity <Time at={c.last_activity_at} />
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="tasks-h" id="employee-tasks" data-live="task. team.">
        <h2 id="tasks-h">Recent tasks</h2>
        <TaskTable tasks={props.tasks} />
      </section>
      <EmployeePlots series={props.series} />
      <section aria-labelledby="eff-h">
        <h2 id="eff-h">Effective configuration</h2>
        <p>
          Reports to {e.reports_to ? <a href={`/console/employees/${e.reports_to}`}>{e.reports_to}</a> : "nobody (a root)"}
          {e.direct_reports?.length ? (
            <>
              {" "}
              · direct reports:{" "}
              {e.direct_reports.map((r) => (
                <a class="chip" href={`/console/employees/${r}`}>
                  {r}
                </a>
              ))}
            </>
          ) : null}{" "}
          · revision {e.revision} · updated <Time at={e.updated_at} />
          {props.viewer.role !== "viewer" ? (
            <>
              {" "}
              · <a href={`/console/employees/${e.employee_id}/edit`}>Edit the employee</a>
            </>
          ) : null}
        </p>
        <Data value={e.effective} />
      </section>
    </ConsolePage>
  );
}

/**
 * The employee's status and the controls a person may use on it: pause and resume for a manager,
 * retire (for good: history kept, open tasks handed back) for an admin.
 */
function Lifecycle(props: { employee: Employee; viewer: Viewer; problem: FormProblem | null }) {
  const e = props.employee;
  const manager = props.viewer.role !== "viewer";
  const action = `/console/employees/${e.employee_id}/lifecycle`;
  const button = (verb: "pause" | "resume" | "retire", label: string, confirm?: string) => (
    <form method="post" action={action} class="inline" {...(confirm ? { "data-confirm": confirm } : {})}>
      <Csrf token={props.viewer.csrf} />
      <input type="hidden" name="action" value={verb} />
      <button type="submit" class={verb === "retire" ? "danger" : undefined}>
        {label}
      </button>
    </form>
  );
  return (
    <section aria-labelledby="status-h" id="employee-status" data-live="employee.">
      <h2 id="status-h">Status</h2>
      <ProblemNote problem={props.problem} />
      <p>
        <Badge status={e.status} />
        {e.status === "paused" ? (
          <>
            {" "}
            {e.paused_reason === "budget"
              ? "by its monthly budget: nothing of its is leased until a manager resumes it or the month ends"
              : "by a person: nothing of its is leased; queued work waits"}
          </>
        ) : e.status === "retired" ? (
          <> its history stays; it takes no new work</>
        ) : null}
        {e.status_changed_at ? (
          <>
            {" "}
            · since <Time at={e.status_changed_at} /> by <code>{e.status_changed_by}</code>
          </>
        ) : null}
      </p>
      {e.status === "retired" || !manager ? null : (
        <div class="actions">
          <a href={`/console/employees/${e.employee_id}/edit`}>Edit</a>
          {e.status === "active" ? button("pause", "Pause") : button("resume", "Resume")}
          {props.viewer.role === "admin"
            ? button(
                "retire",
                "Retire…",
                `Retire ${e.name}? Its queued work ends and its open tasks go back to a person. This cannot be undone.`,
              )
            : null}
        </div>
      )}
    </section>
  );
}

type Memory = ReturnType<typeof memoryView>;
type WikiPage = ReturnType<typeof wikiView>;

function SearchForm(props: { action: string; q?: string; problem?: FormProblem | null }) {
  const qErrors = props.problem?.fields.q;
  return (
    <form method="get" action={props.action} role="search">
      <label for="q">Search</label>
      <input
        id="q"
        name="q"
        type="search"
        value={props.q ?? ""}
        maxlength={500}
        aria-invalid={qErrors ? "true" : undefined}
        aria-describedby={qErrors ? "q-errors" : undefined}
      />
      <FieldErrors id="q-errors" errors={qErrors} />
      <button type="submit">Search</button>
    </form>
  );
}

export function MemoryPage(props: { viewer: Viewer; employee: Employee; q?: string; entries: Memory[] }) {
  const e = props.employee;
  return (
    <ConsolePage title={`${e.name}: memory`} path="/console/employees" viewer={props.viewer}>
      <EmployeeTabs id={e.employee_id} tab="memory" />
      <SearchForm action={`/console/employees/${e.employee_id}/memory`} q={props.q} />
      <section id="memory" data-live="knowledge. employee." aria-label="Memory entries">
        {props.entries.length === 0 ? (
          <Empty>No memory entry{props.q ? " matches" : " yet"}.</Empty>
        ) : (
          <ol class="entries">
            {props.entries.map((m) => (
              <li>
                <p class="prose">{m.text}</p>
                <p class="meta">
                  <Time at={m.created_at} /> · by <code>{m.created_by}</code>
                  {m.tags?.length ? <> · tags {m.tags.join(", ")}</> : null}
                  {m.importance !== undefined && m.importance !== null ? (
                    <>
                      {" "}
                      · importance <Num value={m.importance} />
                    </>
                  ) : null}
                </p>
              </li>
            ))}
          </ol>
        )}
      </section>
    </ConsolePage>
  );
}

interface WikiHit {
  slug: string;
  title: string;
  snippet?: string;
  updated_at: string;
}

export function WikiPageList(props: { viewer: Viewer; employee: Employee; q?: string; pages: WikiHit[]; page?: WikiPage | null }) {
  const e = props.employee;
  return (
    <ConsolePage title={props.page ? `${e.name}: ${props.page.title}` : `${e.name}: wiki`} path="/console/employees" viewer={props.viewer}>
      <EmployeeTabs id={e.employee_id} tab="wiki" />
      {props.page ? (
        <article class="wiki-page">
          <p class="meta">
            <code>{props.page.slug}</code> · revision {props.page.revision} · updated <Time at={props.page.updated_at} /> by{" "}
            <code>{props.page.updated_by}</code>
          </p>
          <pre class="prose">{props.page.body}</pre>
          <p>
            <a href={`/console/employees/${e.employee_id}/wiki`}>All pages</a>
          </p>
        </article>
      ) : (
        <>
          <SearchForm action={`/console/employees/${e.employee_id}/wiki`} q={props.q} />
          <section id="wiki" data-live="knowledge. employee." aria-label="Wiki pages">
            {props.pages.length === 0 ? (
              <Empty>No wiki page{props.q ? " matches" : " yet"}.</Empty>
            ) : (
              <ul>
                {props.pages.map((p) => (
                  <li>
                    <a href={`/console/employees/${e.employee_id}/wiki/${p.slug}`}>{p.title}</a> <code>{p.slug}</code> ·{" "}
                    <Time at={p.updated_at} />
                    {p.snippet ? <p class="snippet">{p.snippet}</p> : null}
                  </li>
                ))}
              </ul>
            )}
          </section>
        </>
      )}
    </ConsolePage>
  );
}
