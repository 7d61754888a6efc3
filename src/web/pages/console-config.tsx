/** @jsxImportSource hono/jsx */
import type { SchemaField } from "../../console/schema-form";
import { Csrf, Data, FieldErrors, ProblemNote, type FormProblem } from "../components/common";
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

/** An input's id from its dotted path (`noise_band.cases` → `cfg-noise_band-cases`; keys are snake_case). */
export const fieldId = (path: string) => `cfg-${path.replaceAll(".", "-")}`;

function hint(f: SchemaField): string {
  const parts: string[] = [];
  if (f.kind === "integer" || f.kind === "number") {
    parts.push(f.kind === "integer" ? "a whole number" : "a number");
    if (f.min !== undefined && f.max !== undefined) parts.push(`${f.min} to ${f.max}`);
    else if (f.min !== undefined) parts.push(`at least ${f.min}`);
    else if (f.max !== undefined) parts.push(`at most ${f.max}`);
  }
  if (f.kind === "lines") parts.push(`one per line${f.maxItems !== undefined ? `, at most ${f.maxItems}` : ""}`);
  if (f.kind === "boolean" && f.optional) parts.push("true or false, or not set");
  if (f.kind === "json") parts.push("JSON");
  if (f.kind === "string" && f.maxLength !== undefined) parts.push(`up to ${f.maxLength} characters`);
  if (f.default !== undefined) parts.push(`default ${typeof f.default === "string" ? f.default : JSON.stringify(f.default)}`);
  if (f.kind !== "boolean" && f.kind !== "lines") {
    if (f.nullable) parts.push("empty: none");
    else if (f.optional) parts.push("empty: not set");
    else if (f.default !== undefined) parts.push("empty: the default");
  }
  return [f.description, parts.join("; ")].filter(Boolean).join(" — ");
}

/** One generated field: its label, input, hint, and the server's messages for it. */
function Field(props: { field: SchemaField; value: string | undefined; errors: string[] | undefined }) {
  const f = props.field;
  const id = fieldId(f.path);
  const v = props.value ?? "";
  const attrs = props.errors
    ? { "aria-invalid": "true", "aria-describedby": `${id}-errors ${id}-hint` }
    : { "aria-describedby": `${id}-hint` };
  let input;
  if (f.kind === "boolean" && !f.optional) {
    input = <input type="checkbox" id={id} name={f.path} checked={v === "on" || v === "true"} {...attrs} />;
  } else if (f.kind === "boolean" || f.kind === "enum") {
    const options = f.kind === "enum" ? f.options : ["true", "false"];
    const unset = f.optional || f.nullable;
    input = (
      <select id={id} name={f.path} {...attrs}>
        {unset ? <option value="">{f.nullable ? "(none)" : "(not set)"}</option> : null}
        {options.map((o) => (
          <option value={o} selected={v === o}>
            {o}
          </option>
        ))}
      </select>
    );
  } else if (f.kind === "integer" || f.kind === "number") {
    input = (
      <input type="number" id={id} name={f.path} value={v} step={f.kind === "integer" ? "1" : "any"} min={f.min} max={f.max} {...attrs} />
    );
  } else if (f.kind === "string") {
    input = <input type={f.url ? "url" : "text"} id={id} name={f.path} value={v} maxlength={f.maxLength} autocomplete="off" {...attrs} />;
  } else {
    const rows = Math.min(12, Math.max(3, v.split("\n").length + 1));
    input = (
      <textarea id={id} name={f.path} rows={rows} class={f.kind === "json" ? "code" : undefined} spellcheck={false} {...attrs}>
        {v}
      </textarea>
    );
  }
  return (
    <div class="field" data-kind={f.kind}>
      <label for={id}>
        <code>{f.label}</code>
      </label>
      {input}
      <p class="meta" id={`${id}-hint`}>
        {hint(f) || f.kind}
      </p>
      <FieldErrors id={`${id}-errors`} errors={props.errors} />
    </div>
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
                <Field field={f} value={props.values[f.path]} errors={fieldProblem?.fields[f.path]} />
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
