/** @jsxImportSource hono/jsx */
import { TASK_MODES, TASK_PRIORITIES } from "../../db/schema";
import { Csrf, FieldErrors, ProblemNote, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { errorsUnder } from "./console-goal-form";

/** The new-task form's fields as typed, shown again when the form is refused. */
export interface TaskDraft {
  title?: string;
  acceptance_criteria?: string;
  assignee?: string;
  mode?: string;
  priority?: string;
  tags?: string;
  rounds_left?: string;
  manual?: string;
}

/** An employee the form may address a task to. */
export interface AssigneeChoice {
  employee_id: string;
  name: string;
}

const described = (id: string, errors: string[] | undefined, hint?: boolean) =>
  errors
    ? { "aria-invalid": "true", "aria-describedby": hint ? `${id}-errors ${id}-hint` : `${id}-errors` }
    : hint
      ? { "aria-describedby": `${id}-hint` }
      : {};

/**
 * The tasks page's "New task" form: `POST /v1/tasks` for a browser, its fields those of the API's
 * body. A manager sees the form; anyone else a note.
 */
export function NewTaskSection(props: { viewer: Viewer; employees: AssigneeChoice[]; problem?: FormProblem | null; draft?: TaskDraft }) {
  const p = props.problem;
  const d = props.draft ?? {};
  const errors = (path: string) => errorsUnder(p, path);
  const [titleE, criteriaE, assigneeE, modeE, priorityE, tagsE, roundsE, manualE] = [
    "title",
    "acceptance_criteria",
    "assignee",
    "mode",
    "priority",
    "tags",
    "rounds_left",
    "manual",
  ].map(errors);
  let body;
  if (props.viewer.role === "viewer") body = <p class="note">Creating a task needs the manager role.</p>;
  else if (props.employees.length === 0)
    body = (
      <p class="note">
        No active employee to address a task to yet: <a href="/console/employees/new">create one</a> first.
      </p>
    );
  else
    body = (
      <form method="post" action="/console/tasks" id="task-form">
        <Csrf token={props.viewer.csrf} />
        <ProblemNote problem={p} />
        <label for="task-title">Title</label>
        <input id="task-title" name="title" required maxlength={300} value={d.title ?? ""} {...described("task-title", titleE)} />
        <FieldErrors id="task-title-errors" errors={titleE} />
        <label for="task-criteria">Acceptance criteria, one per line</label>
        <textarea id="task-criteria" name="acceptance_criteria" rows={4} {...described("task-criteria", criteriaE, true)}>
          {d.acceptance_criteria ?? ""}
        </textarea>
        <p class="meta" id="task-criteria-hint">
          The goal, as checks: how a person (or the evaluator) tells it is met. Up to 50.
        </p>
        <FieldErrors id="task-criteria-errors" errors={criteriaE} />
        <label for="task-assignee">Addressed to</label>
        <select id="task-assignee" name="assignee" required {...described("task-assignee", assigneeE, true)}>
          <option value="" selected={!d.assignee}>
            Choose an employee
          </option>
          {props.employees.map((e) => (
            <option value={e.employee_id} selected={d.assignee === e.employee_id}>
              {e.name} ({e.employee_id})
            </option>
          ))}
        </select>
        <p class="meta" id="task-assignee-hint">
          The dispatch policy routes it from there: to this employee, or to one of a roster or a report (<code>[dispatch]</code>).
        </p>
        <FieldErrors id="task-assignee-errors" errors={assigneeE} />
        <label for="task-mode">Mode</label>
        <select id="task-mode" name="mode" {...described("task-mode", modeE)}>
          {TASK_MODES.map((m) => (
            <option value={m} selected={(d.mode ?? "goal") === m}>
              {m}
            </option>
          ))}
        </select>
        <FieldErrors id="task-mode-errors" errors={modeE} />
        <label for="task-priority">Priority</label>
        <select id="task-priority" name="priority" {...described("task-priority", priorityE)}>
          {TASK_PRIORITIES.map((m) => (
            <option value={m} selected={(d.priority ?? "medium") === m}>
              {m}
            </option>
          ))}
        </select>
        <FieldErrors id="task-priority-errors" errors={priorityE} />
        <label for="task-tags">Tags (optional)</label>
        <input id="task-tags" name="tags" value={d.tags ?? ""} placeholder="docs, billing" {...described("task-tags", tagsE, true)} />
        <p class="meta" id="task-tags-hint">
          Comma-separated; with the priority they give the task its class.
        </p>
        <FieldErrors id="task-tags-errors" errors={tagsE} />
        <label for="task-rounds">Rounds it may spend (optional)</label>
        <input
          id="task-rounds"
          name="rounds_left"
          type="number"
          min={0}
          max={50}
          inputmode="numeric"
          value={d.rounds_left ?? ""}
          {...described("task-rounds", roundsE, true)}
        />
        <p class="meta" id="task-rounds-hint">
          Blank: the <code>[goals]</code> iteration cap. Not for a manual task.
        </p>
        <FieldErrors id="task-rounds-errors" errors={roundsE} />
        <p>
          <input
            id="task-manual"
            name="manual"
            type="checkbox"
            value="on"
            checked={d.manual === "on"}
            {...described("task-manual", manualE)}
          />{" "}
          <label for="task-manual">Manual: a person does it and settles it by hand (the goal loop never works it)</label>
        </p>
        <FieldErrors id="task-manual-errors" errors={manualE} />
        <button type="submit">Create the task</button>
      </form>
    );
  return (
    <section aria-labelledby="task-new-h" id="task-new">
      <h2 id="task-new-h">New task</h2>
      {body}
    </section>
  );
}

/**
 * The task page's "Cancel the goal": settles an open task as `failed` by hand, as
 * `POST /v1/tasks/:id/settle` does, its live round cancelled. A manager sees it on an open task.
 */
export function CancelTaskSection(props: { viewer: Viewer; taskId: string; status: string; problem?: FormProblem | null }) {
  if (props.viewer.role === "viewer" || (props.status !== "assigned" && !props.problem)) return null;
  return (
    <section aria-labelledby="task-cancel-h" id="task-cancel">
      <h2 id="task-cancel-h">Cancel the goal</h2>
      <ProblemNote problem={props.problem} />
      {props.status === "assigned" ? (
        <form
          method="post"
          action={`/console/tasks/${props.taskId}/cancel`}
          class="inline"
          data-confirm="Cancel this goal? It is settled as failed and its running round is stopped; this cannot be undone."
        >
          <Csrf token={props.viewer.csrf} />
          <p class="meta">
            Settles the task as failed (event task.cancelled), stops its running round and frees the employee for its next task.
          </p>
          <button type="submit">Cancel the goal</button>
        </form>
      ) : null}
    </section>
  );
}
