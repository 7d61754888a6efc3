/** @jsxImportSource hono/jsx */
import type { SchemaField } from "../../console/schema-form";
import { FieldErrors } from "./common";

/**
 * One field of a form generated from a zod schema (src/console/schema-form.ts): the config sections'
 * forms and the employee edit form draw their inputs with it.
 */

/** An input's id from its dotted path (`noise_band.cases` → `cfg-noise_band-cases`; keys are snake_case). */
export const fieldId = (path: string, prefix = "cfg") => `${prefix}-${path.replaceAll(".", "-")}`;

function hint(f: SchemaField): string {
  const parts: string[] = [];
  if (f.kind === "integer" || f.kind === "number") {
    parts.push(f.kind === "integer" ? "a whole number" : "a number");
    if (f.min !== undefined && f.max !== undefined) parts.push(`${f.min} to ${f.max}`);
    else if (f.min !== undefined) parts.push(`at least ${f.min}`);
    else if (f.max !== undefined) parts.push(`at most ${f.max}`);
  }
  if (f.kind === "lines") {
    parts.push(`one per line${f.maxItems !== undefined ? `, at most ${f.maxItems}` : ""}`);
    if (f.optional) parts.push("empty: not set");
  }
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
export function SchemaFieldInput(props: {
  field: SchemaField;
  value: string | undefined;
  errors: string[] | undefined;
  /** The ids' prefix (`cfg` for a config section), so two generated forms on one page never share an id. */
  idPrefix?: string;
}) {
  const f = props.field;
  const id = fieldId(f.path, props.idPrefix);
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
