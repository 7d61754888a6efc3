/** @jsxImportSource hono/jsx */
import { MODEL_EFFORTS } from "../../db/schema";
import { Csrf, FieldErrors, ProblemNote, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

/** The create form's fields as typed, shown again when the form is refused. */
export interface EmployeeDraft {
  id?: string;
  name?: string;
  reports_to?: string;
  runtime?: string;
  model?: string;
  effort?: string;
}

/** The model a runtime gets when the form leaves it blank (a runtime without one needs it named). */
export const DEFAULT_MODELS: Readonly<Record<string, string>> = { claude: "claude-sonnet-4-6", codex: "gpt-5-codex", offline: "offline" };

/** Messages for a field path and every path under it (`model.preferred`). */
function errorsUnder(problem: FormProblem | null | undefined, path: string): string[] | undefined {
  if (!problem) return undefined;
  const out = Object.entries(problem.fields)
    .filter(([p]) => p === path || p.startsWith(`${path}.`))
    .flatMap(([, msgs]) => msgs);
  return out.length ? out : undefined;
}

const invalidAttrs = (id: string, errors: string[] | undefined) =>
  errors ? { "aria-invalid": "true", "aria-describedby": `${id}-errors ${id}-hint` } : { "aria-describedby": `${id}-hint` };

/** `/console/employees/new`: the form that `PUT /v1/employees/:id` is for a browser (create only). */
export function NewEmployeePage(props: {
  viewer: Viewer;
  employees: { employee_id: string; name: string }[];
  runtimes: { runtime: string; offered: boolean }[];
  problem?: FormProblem | null;
  draft?: EmployeeDraft;
}) {
  const p = props.problem;
  const d = props.draft ?? {};
  const idErrors = errorsUnder(p, "id");
  const nameErrors = errorsUnder(p, "name");
  const reportsErrors = errorsUnder(p, "reports_to");
  const runtimeErrors = errorsUnder(p, "runtime");
  const modelErrors = errorsUnder(p, "model.preferred");
  const effortErrors = errorsUnder(p, "model.effort");
  const defaults = Object.entries(DEFAULT_MODELS)
    .map(([r, m]) => `${m} for ${r}`)
    .join(", ");
  return (
    <ConsolePage title="New employee" path="/console/employees" viewer={props.viewer}>
      <p>
        <a href="/console/employees">Employees</a> › new
      </p>
      <form method="post" action="/console/employees" id="employee-create">
        <Csrf token={props.viewer.csrf} />
        <ProblemNote problem={p} />
        <label for="employee-id">Id</label>
        <input
          id="employee-id"
          name="id"
          required
          value={d.id ?? ""}
          maxlength={63}
          autocomplete="off"
          {...invalidAttrs("employee-id", idErrors)}
        />
        <p class="meta" id="employee-id-hint">
          1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit. It cannot change later.
        </p>
        <FieldErrors id="employee-id-errors" errors={idErrors} />
        <label for="employee-name">Name</label>
        <input
          id="employee-name"
          name="name"
          required
          value={d.name ?? ""}
          maxlength={100}
          {...invalidAttrs("employee-name", nameErrors)}
        />
        <p class="meta" id="employee-name-hint">
          How people see it.
        </p>
        <FieldErrors id="employee-name-errors" errors={nameErrors} />
        <label for="employee-reports-to">Reports to</label>
        <select id="employee-reports-to" name="reports_to" {...invalidAttrs("employee-reports-to", reportsErrors)}>
          <option value="" selected={!d.reports_to}>
            nobody (a root)
          </option>
          {props.employees.map((e) => (
            <option value={e.employee_id} selected={d.reports_to === e.employee_id}>
              {e.name} ({e.employee_id})
            </option>
          ))}
        </select>
        <p class="meta" id="employee-reports-to-hint">
          Its manager in the org.
        </p>
        <FieldErrors id="employee-reports-to-errors" errors={reportsErrors} />
        <label for="employee-runtime">Runtime</label>
        <select id="employee-runtime" name="runtime" required {...invalidAttrs("employee-runtime", runtimeErrors)}>
          {props.runtimes.map((r) => (
            <option value={r.runtime} selected={d.runtime === r.runtime}>
              {r.runtime}
              {r.offered ? "" : " (no runner offers it now)"}
            </option>
          ))}
        </select>
        <p class="meta" id="employee-runtime-hint">
          Where its work runs: a runtime a live runner offers now is listed first.
        </p>
        <FieldErrors id="employee-runtime-errors" errors={runtimeErrors} />
        <label for="employee-model">Model</label>
        <input id="employee-model" name="model" value={d.model ?? ""} maxlength={200} {...invalidAttrs("employee-model", modelErrors)} />
        <p class="meta" id="employee-model-hint">
          Blank: the runtime's default ({defaults}).
        </p>
        <FieldErrors id="employee-model-errors" errors={modelErrors} />
        <label for="employee-effort">Effort</label>
        <select id="employee-effort" name="effort" {...invalidAttrs("employee-effort", effortErrors)}>
          <option value="" selected={!d.effort}>
            the runtime's default
          </option>
          {MODEL_EFFORTS.map((e) => (
            <option value={e} selected={d.effort === e}>
              {e}
            </option>
          ))}
        </select>
        <p class="meta" id="employee-effort-hint">
          Optional: how hard the model thinks.
        </p>
        <FieldErrors id="employee-effort-errors" errors={effortErrors} />
        <button type="submit">Create the employee</button>
      </form>
    </ConsolePage>
  );
}
