/** @jsxImportSource hono/jsx */
import type { SchemaField } from "../../console/schema-form";
import { Csrf, FieldErrors, ProblemNote, type FormProblem } from "../components/common";
import { SchemaFieldInput } from "../components/schema-field";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

/** The form's groups, by a field path's first key, in the order a person reads them. */
const GROUPS: readonly { key: string; legend: string; note?: string }[] = [
  { key: "", legend: "Who" },
  { key: "model", legend: "Model" },
  { key: "capabilities", legend: "Tools", note: "Unset: the default tools. The sandbox setting applies to every run of this employee." },
  {
    key: "team",
    legend: "Its own [team]",
    note: "Each key left unset takes the global [team] section's value (then the built-in default), key by key.",
  },
  { key: "evolution", legend: "Its own [evolution]", note: "Each key left unset takes the global [evolution] section's value." },
  { key: "contract", legend: "Its contract", note: "Phrases its SOUL and playbook must never, or must always, contain." },
];

const groupOf = (path: string) => {
  const head = path.split(".")[0]!;
  return GROUPS.some((g) => g.key === head) ? head : "";
};

/**
 * `/console/employees/:id/edit`: every field `PUT /v1/employees/:id` takes, as a form generated from
 * the same schema (the employee's own `[team]`, `[evolution]` and contract included, so a save keeps
 * what it does not change). The revision read travels with the form: a change made since is refused.
 */
export function EditEmployeePage(props: {
  viewer: Viewer;
  employeeId: string;
  name: string;
  revision: number;
  fields: readonly SchemaField[];
  /** The form's strings: the stored employee, or the refused draft. */
  values: Readonly<Record<string, string>>;
  /** Who it may report to (itself excluded; the server refuses a cycle). */
  managers: { employee_id: string; name: string }[];
  problem?: FormProblem | null;
}) {
  const p = props.problem;
  const id = props.employeeId;
  const reportsTo = props.values.reports_to ?? "";
  const reportsErrors = p?.fields.reports_to;
  const field = (f: SchemaField) =>
    f.path === "reports_to" ? (
      <div class="field" data-kind="enum">
        <label for="emp-reports_to">Reports to</label>
        <select
          id="emp-reports_to"
          name="reports_to"
          aria-invalid={reportsErrors ? "true" : undefined}
          aria-describedby={reportsErrors ? "emp-reports_to-errors" : undefined}
        >
          <option value="" selected={reportsTo === ""}>
            nobody (a root)
          </option>
          {props.managers.map((m) => (
            <option value={m.employee_id} selected={reportsTo === m.employee_id}>
              {m.name} ({m.employee_id})
            </option>
          ))}
        </select>
        <FieldErrors id="emp-reports_to-errors" errors={reportsErrors} />
      </div>
    ) : (
      <SchemaFieldInput field={f} value={props.values[f.path]} errors={p?.fields[f.path]} idPrefix="emp" />
    );
  return (
    <ConsolePage title={`Edit ${props.name}`} path="/console/employees" viewer={props.viewer}>
      <p>
        <a href="/console/employees">Employees</a> › <a href={`/console/employees/${id}`}>{id}</a> › edit
      </p>
      <form method="post" action={`/console/employees/${id}/edit`} id="employee-edit">
        <Csrf token={props.viewer.csrf} />
        <input type="hidden" name="revision" value={String(props.revision)} />
        <ProblemNote problem={p} />
        {GROUPS.map((g) => {
          const fields = props.fields.filter((f) => groupOf(f.path) === g.key);
          if (fields.length === 0) return null;
          return (
            <fieldset id={`employee-edit-${g.key || "who"}`}>
              <legend>{g.legend}</legend>
              {g.note ? <p class="meta">{g.note}</p> : null}
              {fields.map(field)}
            </fieldset>
          );
        })}
        <p class="meta">
          Its workspace is <code>&lt;home&gt;/agents/{id}/</code> on the runner that leases its work (the runner's <code>--home</code>); the
          id names it, so it is not set here.
        </p>
        <button type="submit">Save revision {props.revision + 1}</button>
      </form>
    </ConsolePage>
  );
}
