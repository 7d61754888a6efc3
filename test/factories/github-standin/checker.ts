import { Validator, type OutputUnit } from "@cfworker/json-schema";
import type { Contract, ContractOperation, JsonSchema } from "./contract";

/**
 * Judges requests and responses against the contract (GitHub's OpenAPI description, compacted):
 * which operation a method + path is, and whether its parameters and body are ones the
 * description allows. Each problem is a sentence naming the operation and the place.
 */

interface Route {
  op: ContractOperation;
  segments: Array<{ literal: string } | { param: string }>;
  literals: number;
}

export interface Match {
  op: ContractOperation;
  /** Path parameters, percent-decoded. */
  params: Record<string, string>;
}

export type MatchResult = { match: Match } | { problem: string };

function schemaType(schema: JsonSchema): string | undefined {
  const t = schema.type;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) return t.find((x) => x !== "null") as string | undefined;
  return undefined;
}

/** A query or path string as the JSON value its schema describes (what GitHub parses it as). */
function coerce(value: string, schema: JsonSchema): unknown {
  switch (schemaType(schema)) {
    case "integer":
    case "number":
      return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    case "boolean":
      return value === "true" ? true : value === "false" ? false : value;
    case "array":
      return value.split(",");
    default:
      return value;
  }
}

function describe(errors: OutputUnit[]): string {
  // The deepest errors say the most; cfworker lists the enclosing ones after them.
  const shown = errors
    .filter((e) => !/subschema had errors|does not match schema|did not match|does not match (all|any|exactly)/i.test(e.error))
    .slice(0, 5);
  return (shown.length ? shown : errors.slice(0, 5)).map((e) => `${e.instanceLocation || "#"}: ${e.error}`).join("; ");
}

export class ContractChecker {
  readonly #routes: Route[];
  readonly #validators = new Map<JsonSchema, Validator>();

  constructor(readonly contract: Contract) {
    this.#routes = contract.operations.map((op) => {
      const segments = op.path
        .split("/")
        .slice(1)
        .map((s) => (/^\{[^}]+\}$/.test(s) ? { param: s.slice(1, -1) } : { literal: s }));
      return { op, segments, literals: segments.filter((s) => "literal" in s).length };
    });
  }

  operation(key: string): ContractOperation {
    const op = this.contract.operations.find((o) => o.key === key);
    if (!op) throw new Error(`no operation ${key} in the contract`);
    return op;
  }

  /** The operation a request is, or why the description has none for it. */
  match(method: string, pathname: string): MatchResult {
    const raw = pathname.split("/").slice(1);
    const candidates: Array<{ route: Route; params: Record<string, string> }> = [];
    for (const route of this.#routes) {
      if (route.segments.length !== raw.length) continue;
      const params: Record<string, string> = {};
      const fits = route.segments.every((seg, i) => {
        if ("literal" in seg) return seg.literal === raw[i];
        if (!raw[i]) return false;
        try {
          params[seg.param] = decodeURIComponent(raw[i]!);
          return true;
        } catch {
          return false;
        }
      });
      if (fits) candidates.push({ route, params });
    }
    if (candidates.length === 0) return { problem: `no path of GitHub's description matches ${pathname}` };
    // A literal segment beats a parameter (`/git/ref/{ref}` is not `/{x}/{y}/{z}`).
    const best = Math.max(...candidates.map((c) => c.route.literals));
    const paths = candidates.filter((c) => c.route.literals === best);
    const hit = paths.find((c) => c.route.op.method === method.toUpperCase());
    if (!hit) {
      const allowed = paths.map((c) => c.route.op.method).join(", ");
      return { problem: `GitHub's description has no ${method.toUpperCase()} on ${paths[0]!.route.op.path} (it has ${allowed})` };
    }
    return { match: { op: hit.route.op, params: hit.params } };
  }

  /** Problems with a request's parameters and body; empty when the description allows it. */
  checkRequest(match: Match, query: URLSearchParams, contentType: string | null, bodyText: string): string[] {
    const { op, params } = match;
    const problems: string[] = [];
    const where = op.key;
    for (const p of op.params.filter((p) => p.in === "path")) {
      const value = params[p.name];
      if (value === undefined) problems.push(`${where}: path parameter ${p.name} is missing`);
      else this.#check(p.schema, coerce(value, p.schema), `${where}: path parameter ${p.name}`, problems);
    }
    const declared = new Map(op.params.filter((p) => p.in === "query").map((p) => [p.name, p]));
    for (const name of new Set(query.keys())) {
      const p = declared.get(name);
      if (!p) problems.push(`${where}: query parameter '${name}' is not in the description`);
      else this.#check(p.schema, coerce(query.getAll(name).join(","), p.schema), `${where}: query parameter ${name}`, problems);
    }
    for (const p of declared.values())
      if (p.required && !query.has(p.name)) problems.push(`${where}: query parameter ${p.name} is required`);

    if (!op.body) {
      if (bodyText.length > 0) problems.push(`${where}: the operation takes no request body`);
      return problems;
    }
    if (bodyText.length === 0) {
      if (op.body.required) problems.push(`${where}: the request body is required`);
      return problems;
    }
    const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
    if (!op.body.mediaTypes.includes(mediaType)) {
      problems.push(`${where}: content type '${contentType ?? ""}' is not one of ${op.body.mediaTypes.join(", ")}`);
      return problems;
    }
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      problems.push(`${where}: the request body is not JSON`);
      return problems;
    }
    if (op.body.schema) this.#check(op.body.schema, body, `${where}: request body`, problems);
    return problems;
  }

  /** Problems with a response the stand-in is about to send (its own conformance). */
  checkResponse(op: ContractOperation, status: number, body: unknown): string[] {
    const documented = op.responses?.[String(status)];
    const problems: string[] = [];
    if (documented?.schema) this.#check(documented.schema, body, `${op.key} response ${status}`, problems);
    else if (!documented && status !== 401 && status !== 404) problems.push(`${op.key}: status ${status} is not a documented response`);
    else if (!documented) this.#check({ $ref: "#/definitions/basic-error" }, body, `${op.key} response ${status}`, problems);
    return problems;
  }

  #check(schema: JsonSchema, value: unknown, where: string, problems: string[]): void {
    const result = this.#validator(schema).validate(value);
    if (!result.valid) problems.push(`${where} does not match GitHub's description: ${describe(result.errors)}`);
  }

  #validator(schema: JsonSchema): Validator {
    let validator = this.#validators.get(schema);
    if (!validator) {
      const definitions = this.#reachable(schema);
      validator = new Validator(structuredClone({ ...schema, definitions }), "4", false);
      this.#validators.set(schema, validator);
    }
    return validator;
  }

  #reachable(schema: unknown, out: Record<string, JsonSchema> = {}): Record<string, JsonSchema> {
    if (Array.isArray(schema)) {
      for (const item of schema) this.#reachable(item, out);
    } else if (schema && typeof schema === "object") {
      for (const [key, value] of Object.entries(schema)) {
        if (key === "$ref" && typeof value === "string" && value.startsWith("#/definitions/")) {
          const name = value.slice("#/definitions/".length);
          if (!(name in out)) {
            const def = this.contract.definitions[name];
            if (!def) throw new Error(`contract has no definition ${name}`);
            out[name] = def;
            this.#reachable(def, out);
          }
        } else this.#reachable(value, out);
      }
    }
    return out;
  }
}
