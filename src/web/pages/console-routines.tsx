/** @jsxImportSource hono/jsx */
import type { RoutineView } from "../../routines/store";
import { Badge, Csrf, Empty, FieldErrors, ProblemNote, Time, Unknown, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage, Countdown } from "./console-shell";

/** The create form's fields as typed, shown again when the form is refused. */
export interface RoutineDraft {
  employee_id?: string;
  name?: string;
  cron?: string;
  every_minutes?: string;
  title?: string;
  acceptance_criteria?: string;
}

export interface RoutineEmployee {
  employee_id: string;
  name: string;
  status: string;
}

/** A refused enable, disable or delete, shown on its routine's row. */
export interface RoutineRowProblem {
  routineId: string;
  problem: FormProblem;
}

export function scheduleText(schedule: RoutineView["schedule"]): string {
  if ("cron" in schedule) return `cron ${schedule.cron} (UTC)`;
  const n = schedule.every_minutes;
  return n === 1 ? "every minute" : `every ${n} minutes`;
}

function LastOutcome(props: { outcome: RoutineView["last_outcome"] }) {
  const o = props.outcome;
  if (!o) return <span class="none">none yet</span>;
  return (
    <>
      <Badge status={o.outcome === "fired" ? "fired" : (o.reason ?? "skipped")} kind="outcome" /> <Time at={o.slot} />
      {o.task_id ? (
        <>
          {" "}
          · <a href={`/console/tasks/${o.task_id}`}>{o.task_id}</a>
        </>
      ) : null}
      {o.error_code ? (
        <>
          {" "}
          · <code>{o.error_code}</code>
        </>
      ) : null}
    </>
  );
}

function RowActions(props: { r: RoutineView; viewer: Viewer }) {
  const base = `/console/routines/${props.r.routine_id}`;
  return (
    <div class="buttons">
      <form method="post" action={`${base}/${props.r.enabled ? "disable" : "enable"}`}>
        <Csrf token={props.viewer.csrf} />
        <button type="submit">{props.r.enabled ? "Disable" : "Enable"}</button>
      </form>
      <form method="post" action={`${base}/delete`}>
        <Csrf token={props.viewer.csrf} />
        <button type="submit" class="deny">
          Delete
        </button>
      </form>
    </div>
  );
}

function RoutineTable(props: {
  routines: RoutineView[];
  viewer: Viewer;
  now: Date;
  canManage: boolean;
  rowProblem?: RoutineRowProblem | null;
}) {
  if (props.routines.length === 0) return <Empty>No routine yet.</Empty>;
  return (
    <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
      <table>
        <thead>
          <tr>
            <th scope="col">Routine</th>
            <th scope="col">Employee</th>
            <th scope="col">Schedule</th>
            <th scope="col">Next slot</th>
            <th scope="col">Last outcome</th>
            {props.canManage ? <th scope="col">Actions</th> : null}
          </tr>
        </thead>
        <tbody>
          {props.routines.map((r) => (
            <tr id={`routine-${r.routine_id}`} data-enabled={r.enabled ? "true" : "false"}>
              <td>
                {r.name}
                <br />
                <code>{r.routine_id}</code> {r.enabled ? null : <Badge status="disabled" />}
              </td>
              <td>
                <a href={`/console/employees/${r.employee_id}`}>{r.employee_id}</a>
              </td>
              <td>{scheduleText(r.schedule)}</td>
              <td>
                {r.next_slot ? (
                  <>
                    <Time at={r.next_slot} /> (<Countdown at={r.next_slot} now={props.now} />)
                  </>
                ) : r.enabled ? (
                  <Unknown />
                ) : (
                  <span class="none">disabled</span>
                )}
              </td>
              <td>
                <LastOutcome outcome={r.last_outcome} />
              </td>
              {props.canManage ? (
                <td>
                  {props.rowProblem?.routineId === r.routine_id ? <ProblemNote problem={props.rowProblem.problem} /> : null}
                  <RowActions r={r} viewer={props.viewer} />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One text field with its label and the server's messages for it, tied by `aria-describedby`. */
function Field(props: {
  id: string;
  name: string;
  label: string;
  value?: string;
  errors?: string[];
  type?: string;
  placeholder?: string;
  required?: boolean;
}) {
  const errorsId = `${props.id}-errors`;
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        name={props.name}
        type={props.type ?? "text"}
        value={props.value ?? ""}
        placeholder={props.placeholder}
        required={props.required}
        aria-invalid={props.errors ? "true" : undefined}
        aria-describedby={props.errors ? errorsId : undefined}
      />
      <FieldErrors id={errorsId} errors={props.errors} />
    </>
  );
}

/** Messages for a field path and every path under it (`template.acceptance_criteria.2`). */
function errorsUnder(problem: FormProblem | null | undefined, path: string): string[] | undefined {
  if (!problem) return undefined;
  const out = Object.entries(problem.fields)
    .filter(([p]) => p === path || p.startsWith(`${path}.`))
    .flatMap(([, msgs]) => msgs);
  return out.length ? out : undefined;
}

function CreateForm(props: { viewer: Viewer; employees: RoutineEmployee[]; problem?: FormProblem | null; draft?: RoutineDraft }) {
  const p = props.problem;
  const d = props.draft ?? {};
  const employeeErrors = errorsUnder(p, "employee_id");
  const criteriaErrors = errorsUnder(p, "template.acceptance_criteria");
  const scheduleErrors = p?.fields.schedule;
  return (
    <form method="post" action="/console/routines" id="routine-create">
      <Csrf token={props.viewer.csrf} />
      <ProblemNote problem={p} />
      <label for="routine-employee">Employee</label>
      <select
        id="routine-employee"
        name="employee_id"
        required
        aria-invalid={employeeErrors ? "true" : undefined}
        aria-describedby={employeeErrors ? "routine-employee-errors" : undefined}
      >
        {props.employees.map((e) => (
          <option value={e.employee_id} selected={d.employee_id === e.employee_id}>
            {e.name} ({e.employee_id}){e.status === "active" ? "" : ` — ${e.status}`}
          </option>
        ))}
      </select>
      <FieldErrors id="routine-employee-errors" errors={employeeErrors} />
      <Field id="routine-name" name="name" label="Name" value={d.name} errors={errorsUnder(p, "name")} required />
      <fieldset aria-describedby={scheduleErrors ? "routine-schedule-errors" : undefined}>
        <legend>Schedule (fill one)</legend>
        <Field
          id="routine-cron"
          name="cron"
          label="Cron expression, UTC (minute hour day-of-month month day-of-week)"
          placeholder="0 9 * * MON-FRI"
          value={d.cron}
          errors={errorsUnder(p, "schedule.cron")}
        />
        <Field
          id="routine-every"
          name="every_minutes"
          type="number"
          label="Or every N minutes (1 to 10080)"
          value={d.every_minutes}
          errors={errorsUnder(p, "schedule.every_minutes")}
        />
        <FieldErrors id="routine-schedule-errors" errors={scheduleErrors} />
      </fieldset>
      <Field id="routine-title" name="title" label="Goal title" value={d.title} errors={errorsUnder(p, "template.title")} required />
      <label for="routine-criteria">Acceptance criteria, one per line</label>
      <textarea
        id="routine-criteria"
        name="acceptance_criteria"
        rows={4}
        aria-invalid={criteriaErrors ? "true" : undefined}
        aria-describedby={criteriaErrors ? "routine-criteria-errors" : undefined}
      >
        {d.acceptance_criteria ?? ""}
      </textarea>
      <FieldErrors id="routine-criteria-errors" errors={criteriaErrors} />
      <button type="submit">Create the routine</button>
    </form>
  );
}

/** `/console/routines`: every routine with its schedule, next slot and last outcome; for a manager the forms. */
export function RoutinesPage(props: {
  viewer: Viewer;
  now: Date;
  routines: RoutineView[];
  employees: RoutineEmployee[];
  canManage: boolean;
  problem?: FormProblem | null;
  draft?: RoutineDraft;
  rowProblem?: RoutineRowProblem | null;
}) {
  return (
    <ConsolePage title="Routines" path="/console/routines" viewer={props.viewer}>
      <p>
        A routine opens a goal for its employee on each slot of its schedule (UTC). A slot fires once; slots missed while nothing ran
        collapse into one; a slot whose last goal is still open merges into it (no model call); a paused employee's slots are skipped.
      </p>
      <section id="routines" data-live="routine." aria-labelledby="routines-h">
        <h2 id="routines-h">Routines ({props.routines.length})</h2>
        <RoutineTable
          routines={props.routines}
          viewer={props.viewer}
          now={props.now}
          canManage={props.canManage}
          rowProblem={props.rowProblem}
        />
      </section>
      <section aria-labelledby="routine-new-h">
        <h2 id="routine-new-h">New routine</h2>
        {!props.canManage ? (
          <p class="note">Creating and changing routines needs the manager role.</p>
        ) : props.employees.length === 0 ? (
          <Empty>No employee to give a routine to (PUT /v1/employees/:id creates one).</Empty>
        ) : (
          <CreateForm viewer={props.viewer} employees={props.employees} problem={props.problem} draft={props.draft} />
        )}
      </section>
    </ConsolePage>
  );
}
