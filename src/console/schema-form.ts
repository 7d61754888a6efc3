import * as z from "zod";
import type { FieldError } from "../lib/errors";

/**
 * A config section's edit form, derived from its zod schema (issue 37): one field per leaf, nested
 * objects flattened into dotted names, and whatever a plain input cannot hold (records, unions,
 * arrays of objects) as a JSON textarea for that sub-path.
 *
 * Fields are read from `z.toJSONSchema(schema, { io: "input" })` rather than from zod's internal
 * `_zod.def` tree: JSON Schema is a documented, stable output that already resolves wrappers
 * (optional, default, prefault, pipe) into `required`, `default`, `minimum`, `enum`…, whereas the
 * def tree has a dozen wrapper kinds to unwrap and is zod's private shape. `io: "input"` describes
 * what a write may send, so a key with a default is optional, as it is for `writeSection`.
 */

type Json = Record<string, unknown>;

interface FieldBase {
  /** The dotted path, also the input's `name` (config keys are snake_case: no dots of their own). */
  path: string;
  /** The key path as operators know it from the API. */
  label: string;
  description?: string;
  /** The schema's default, when it has one. */
  default?: unknown;
  /** Neither required nor defaulted: left empty, the key stays unset. */
  optional: boolean;
  /** `null` is a value (an empty input sends it). */
  nullable: boolean;
}

export type SchemaField =
  | (FieldBase & { kind: "boolean" })
  | (FieldBase & { kind: "number" | "integer"; min?: number; max?: number })
  | (FieldBase & { kind: "string"; maxLength?: number; url: boolean })
  | (FieldBase & { kind: "enum"; options: string[] })
  | (FieldBase & { kind: "lines"; maxItems?: number })
  | (FieldBase & { kind: "json" });

const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The fields of a section's schema, in the schema's key order. */
export function schemaFields(schema: z.ZodType): SchemaField[] {
  // `unrepresentable: "any"`: a type JSON Schema cannot say becomes `{}`, which falls to a JSON field.
  const root = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json;
  return objectFields(root, []);
}

function objectFields(node: Json, prefix: string[]): SchemaField[] {
  const props = isObj(node.properties) ? node.properties : {};
  const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
  return Object.entries(props).flatMap(([key, raw]) => {
    const prop = isObj(raw) ? raw : {};
    const path = [...prefix, key];
    const optional = !required.has(key) && !("default" in prop);
    if (isPlainObjectSchema(prop)) return objectFields(prop, path);
    return [leaf(prop, path, optional)];
  });
}

/** An object with named keys only (a record, `additionalProperties: {…}`, is edited as JSON). */
function isPlainObjectSchema(s: Json): boolean {
  return s.type === "object" && isObj(s.properties) && !isObj(s.additionalProperties) && !("propertyNames" in s) && !("anyOf" in s);
}

function leaf(prop: Json, path: string[], optional: boolean): SchemaField {
  const { inner, nullable } = unwrapNullable(prop);
  const base: FieldBase = {
    path: path.join("."),
    label: path.join("."),
    optional,
    nullable,
    ...(typeof (prop.description ?? inner.description) === "string"
      ? { description: (prop.description ?? inner.description) as string }
      : {}),
    ...("default" in prop ? { default: prop.default } : {}),
  };
  const type = inner.type;
  if (Array.isArray(inner.enum) && inner.enum.every((v) => typeof v === "string"))
    return { ...base, kind: "enum", options: inner.enum as string[] };
  if (type === "boolean") return { ...base, kind: "boolean" };
  if (type === "integer" || type === "number") {
    return {
      ...base,
      kind: type,
      ...(typeof inner.minimum === "number" ? { min: inner.minimum } : {}),
      ...(typeof inner.maximum === "number" ? { max: inner.maximum } : {}),
    };
  }
  if (type === "string") {
    return {
      ...base,
      kind: "string",
      url: inner.format === "uri",
      ...(typeof inner.maxLength === "number" ? { maxLength: inner.maxLength } : {}),
    };
  }
  if (type === "array" && isObj(inner.items) && inner.items.type === "string" && !nullable) {
    return { ...base, kind: "lines", ...(typeof inner.maxItems === "number" ? { maxItems: inner.maxItems } : {}) };
  }
  return { ...base, kind: "json" };
}

/** `X | null` (zod's `.nullable()`) as X that may be null; any other union stays as it is. */
function unwrapNullable(prop: Json): { inner: Json; nullable: boolean } {
  const any = prop.anyOf;
  if (!Array.isArray(any) || any.length !== 2) return { inner: prop, nullable: false };
  const nonNull = any.filter((s) => !(isObj(s) && s.type === "null"));
  if (nonNull.length !== 1 || !isObj(nonNull[0]) || nonNull[0].type === "object" || nonNull[0].type === "array")
    return { inner: prop, nullable: false };
  return { inner: nonNull[0], nullable: true };
}

function at(value: unknown, path: string): unknown {
  let v = value;
  for (const k of path.split(".")) v = isObj(v) ? v[k] : undefined;
  return v;
}

/** A section's value as the form's strings, one per field (an unchecked box is absent, as a browser posts it). */
export function formValues(fields: readonly SchemaField[], value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) {
    const v = at(value, f.path);
    if (v === undefined || v === null) {
      // A JSON field shows what it holds; `null` is written out so it survives a save unchanged.
      if (f.kind === "json" && v === null) out[f.path] = "null";
      continue;
    }
    if (f.kind === "boolean") {
      if (f.optional) out[f.path] = String(v);
      else if (v === true) out[f.path] = "on";
    } else if (f.kind === "lines") out[f.path] = Array.isArray(v) ? v.map(String).join("\n") : JSON.stringify(v);
    else if (f.kind === "json") out[f.path] = JSON.stringify(v, null, 2);
    else out[f.path] = String(v);
  }
  return out;
}

/**
 * The posted form as the value to validate, and the fields whose text could not be read (JSON that
 * does not parse). Checkboxes absent are `false`; an empty input leaves its key out (the default
 * applies, or it stays unset) or sends `null` where null is allowed; a number that does not read as
 * one is passed on as text so the schema's own message names it.
 */
export function valueFromForm(
  fields: readonly SchemaField[],
  form: Readonly<Record<string, string>>,
): { value: Json; errors: FieldError[] } {
  const value: Json = {};
  const errors: FieldError[] = [];
  for (const f of fields) {
    const raw = form[f.path];
    const text = raw?.trim() ?? "";
    let v: unknown;
    switch (f.kind) {
      case "boolean":
        v = f.optional ? (text === "" ? undefined : text === "true" || text === "on") : raw !== undefined && text !== "false";
        break;
      case "number":
      case "integer":
        v = text === "" ? undefined : Number.isFinite(Number(text)) ? Number(text) : text;
        break;
      case "lines":
        // An optional list left empty stays unset: for a list with no default, "none given" and
        // "the empty list" differ (an employee's allowed_tools unset means the default tools).
        v =
          f.optional && text === ""
            ? undefined
            : (raw ?? "")
                .split(/\r?\n/)
                .map((l) => l.trim())
                .filter((l) => l !== "");
        break;
      case "json":
        if (text === "") v = undefined;
        else {
          try {
            v = JSON.parse(text);
          } catch (err) {
            errors.push({ path: f.path, message: `not JSON: ${err instanceof Error ? err.message : String(err)}` });
          }
        }
        break;
      default:
        v = text === "" ? undefined : text;
    }
    if (v === undefined && text === "" && f.nullable) v = null;
    if (v !== undefined) put(value, f.path.split("."), v);
  }
  // A nested object whose every input was left empty is never built: an optional group stays unset
  // and a defaulted one takes its default.
  return { value, errors };
}

function put(target: Json, keys: string[], v: unknown): void {
  let node = target;
  for (const k of keys.slice(0, -1)) node = (node[k] ??= {}) as Json;
  node[keys[keys.length - 1]!] = v;
}

/**
 * The refusal's messages placed on the fields: each error goes to the field at its path or the
 * nearest one above it (`shards.offline.0.from` → the `shards` JSON field); one no field holds (an
 * unknown key, the section as a whole) goes to the form, its path in front.
 */
export function placeErrors(fields: readonly SchemaField[], errors: readonly FieldError[]): Record<string, string[]> {
  const paths = new Set(fields.map((f) => f.path));
  const out: Record<string, string[]> = {};
  for (const e of errors) {
    const parts = e.path === "" ? [] : e.path.split(".");
    let owner = "";
    for (let n = parts.length; n > 0; n--) {
      const p = parts.slice(0, n).join(".");
      if (paths.has(p)) {
        owner = p;
        break;
      }
    }
    // The part of the path below its field names where (an error on a group's own path, or an
    // unknown key, goes to the form with its whole path).
    const below = owner === "" ? e.path : e.path.slice(owner.length + 1);
    const message = below === "" ? e.message : `${below}: ${e.message}`;
    (out[owner] ??= []).push(message);
  }
  return out;
}
