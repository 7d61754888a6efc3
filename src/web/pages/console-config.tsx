/** @jsxImportSource hono/jsx */
import type { SchemaField } from "../../console/schema-form";
import { Csrf, Data, FieldErrors, ProblemNote, type FormProblem } from "../components/common";
import { SchemaFieldInput } from "../components/schema-field";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

export function ConfigListPage(props: { viewer: Viewer; sections: string[] }) {
  return (
    <ConsolePage title="Configuration" path="/console/config" viewer={props.viewer}>
      <ul class="columns">
        {props.sections.map((s) => (
          <li>
            <a href={`/console/config/${s}`}>{s}</a>
          </li>
        ))}
      </ul>
    </ConsolePage>
  );
}

/**
 * One config section: a form generated from its schema (issue 37), each field with the server's
 * messages next to it on a refused save, and the whole section as JSON as a fallback. The server
 * validates the whole section either way. A viewer or manager sees the effective values only.
 */
export function ConfigSectionPage(props: {
  viewer: Viewer;
  section: string;
  fields: readonly SchemaField[];
  /** The fields form's strings: the stored value, or the refused draft. */
  values: Readonly<Record<string, string>>;
  /** The JSON fallback's text: the stored value, or the refused draft. */
  json: string;
  /** What GET /v1/config/:section shows (a section's view may differ from what is stored). */
  effective: unknown;
  /** A refused save; for `mode: "fields"` its messages are keyed by field path ("" for the form). */
  problem?: FormProblem | null;
  mode?: "fields" | "json";
  saved?: boolean;
}) {
  const canEdit = props.viewer.role === "admin";
  const action = `/console/config/${props.section}`;
  const p = props.problem;
  const fieldProblem = p && props.mode !== "json" ? p : null;
  const jsonProblem = p && props.mode === "json" ? p : null;
  const jsonMessages = jsonProblem
    ? Object.entries(jsonProblem.fields)
        .filter(([k]) => k !== "")
        .map(([path, msgs]) => `${path}: ${msgs.join("; ")}`)
    : [];
  const htmx = { "hx-post": action, "hx-target": "#config-section", "hx-select": "#config-section", "hx-swap": "outerHTML" };
  return (
    <ConsolePage title={`Config: ${props.section}`} path="/console/config" viewer={props.viewer}>
      <p>
        <a href="/console/config">Configuration</a> › <code>{props.section}</code>
      </p>
      <section id="config-section" aria-label="Section">
        {props.saved ? (
          <p class="ok" role="status">
            Saved. The effective section is below.
          </p>
        ) : null}
        {canEdit ? (
          <>
            <ProblemNote problem={p} />
            <form method="post" action={action} id="config-fields" {...htmx}>
              <Csrf token={props.viewer.csrf} />
              <input type="hidden" name="form" value="fields" />
              {props.fields.map((f) => (
                <SchemaFieldInput field={f} value={props.values[f.path]} errors={fieldProblem?.fields[f.path]} />
              ))}
              <button type="submit">Save</button>
            </form>
            <details id="config-raw" open={props.mode === "json"}>
              <summary>Raw JSON</summary>
              <form method="post" action={action} {...htmx}>
                <Csrf token={props.viewer.csrf} />
                <input type="hidden" name="form" value="json" />
                <label for="config-json">The whole section, as JSON (unknown keys are refused; missing keys take their defaults)</label>
                <textarea
                  id="config-json"
                  name="json"
                  rows={18}
                  class="code"
                  spellcheck={false}
                  aria-invalid={jsonProblem ? "true" : undefined}
                  aria-describedby={jsonProblem ? "config-json-errors" : undefined}
                >
                  {props.json}
                </textarea>
                <FieldErrors id="config-json-errors" errors={jsonMessages.length ? jsonMessages : undefined} />
                <button type="submit">Save as JSON</button>
              </form>
            </details>
            <details id="config-effective" open={props.saved}>
              <summary>Effective values</summary>
              <Data value={props.effective} />
            </details>
          </>
        ) : (
          <>
            <p class="note">Editing needs the admin role.</p>
            <Data value={props.effective} />
          </>
        )}
      </section>
    </ConsolePage>
  );
}
