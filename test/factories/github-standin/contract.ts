/**
 * The GitHub stand-in's contract: GitHub's published OpenAPI description (`@octokit/openapi`,
 * api.github.com, OpenAPI 3.0) compacted to what checking a request needs. The full description is
 * 13 MB and does not fit a workerd isolate, so vitest.config.ts builds this in Node with
 * `buildContract` and serves it to the tests as the module `virtual:github-contract`.
 *
 * Kept for EVERY operation of the description: method, path template, parameters (path, query)
 * and the request body schema, so any request can be matched and judged. Kept for the operations
 * the stand-in answers (`IMPLEMENTED_OPERATIONS`): the response schemas and GitHub's own examples,
 * which the stand-in starts its answers from and checks them against.
 *
 * Schemas become JSON Schema draft 4 (what OpenAPI 3.0's schema object is based on): `nullable`
 * becomes a `null` type, `$ref`s point into `definitions`, documentation keywords are dropped, and
 * in request bodies an object that lists its properties refuses others (GitHub ignores unknown
 * fields; a client that sends one has a typo or a wrong idea of the API, which a test should catch).
 */

export type JsonSchema = { [key: string]: unknown };

export interface ContractParam {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required: boolean;
  schema: JsonSchema;
}

export interface ContractResponse {
  schema?: JsonSchema;
  example?: unknown;
}

export interface ContractOperation {
  /** `POST /repos/{owner}/{repo}/git/blobs` */
  key: string;
  method: string;
  path: string;
  operationId: string;
  params: ContractParam[];
  body?: { required: boolean; mediaTypes: string[]; schema?: JsonSchema };
  /** By status code; only for implemented operations. */
  responses?: Record<string, ContractResponse>;
}

export interface Contract {
  /** The description's `info.version` and the package's version, for messages. */
  source: string;
  operations: ContractOperation[];
  /** Component schemas by name, converted, reachable from what is kept. */
  definitions: Record<string, JsonSchema>;
}

/** What the stand-in answers; everything else in the description is recognised but refused. */
export const IMPLEMENTED_OPERATIONS = [
  "POST /app/installations/{installation_id}/access_tokens",
  "POST /orgs/{org}/repos",
  "GET /repos/{owner}/{repo}",
  "GET /repos/{owner}/{repo}/git/ref/{ref}",
  "POST /repos/{owner}/{repo}/git/refs",
  "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
  "POST /repos/{owner}/{repo}/git/blobs",
  "POST /repos/{owner}/{repo}/git/trees",
  "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
  "POST /repos/{owner}/{repo}/git/commits",
  "GET /repos/{owner}/{repo}/pulls",
  "POST /repos/{owner}/{repo}/pulls",
] as const;
export type ImplementedOperation = (typeof IMPLEMENTED_OPERATIONS)[number];

type Doc = {
  info: { version: string };
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
};

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const DROPPED = new Set(["description", "example", "examples", "externalDocs", "xml", "discriminator", "deprecated", "title", "default"]);
const COMBINATORS = new Set(["allOf", "anyOf", "oneOf", "not"]);

function resolve(doc: Doc, ref: string): unknown {
  if (!ref.startsWith("#/")) throw new Error(`external $ref ${ref}`);
  return ref
    .slice(2)
    .split("/")
    .reduce<unknown>((node, part) => (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
}

/** Follows `$ref`s that are not schemas (parameters, responses, examples, request bodies). */
function deref<T>(doc: Doc, node: unknown): T {
  let current = node as { $ref?: string };
  for (let i = 0; current && typeof current.$ref === "string" && i < 10; i++) current = resolve(doc, current.$ref) as { $ref?: string };
  return current as T;
}

class Converter {
  readonly definitions: Record<string, JsonSchema> = {};
  readonly #pending = new Set<string>();

  constructor(private readonly doc: Doc) {}

  /** An OpenAPI schema → draft-4 JSON Schema; `strict` closes object schemas (request bodies). */
  schema(node: unknown, strict: boolean, inCombinator = false): JsonSchema {
    if (typeof node !== "object" || node === null) return {};
    const source = node as Record<string, unknown>;
    if (typeof source.$ref === "string") {
      const name = this.#component(source.$ref, strict);
      return { $ref: `#/definitions/${name}` };
    }
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(source)) {
      if (DROPPED.has(key) || key.startsWith("x-") || key === "nullable" || key === "readOnly" || key === "writeOnly") continue;
      if (key === "properties" && value && typeof value === "object") {
        out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.schema(v, strict)]));
      } else if (key === "items" || key === "additionalProperties" || key === "not") {
        out[key] = typeof value === "boolean" ? value : this.schema(value, strict, key === "not" || inCombinator);
      } else if (COMBINATORS.has(key) && Array.isArray(value)) {
        out[key] = value.map((v) => this.schema(v, strict, true));
      } else {
        out[key] = value;
      }
    }
    const isObject = out.type === "object" || (out.type === undefined && out.properties !== undefined);
    const combined = [...COMBINATORS].some((k) => k in out);
    if (strict && !inCombinator && !combined && isObject && out.properties && out.additionalProperties === undefined) {
      out.additionalProperties = false;
    }
    if (source.nullable === true) {
      if (typeof out.type === "string") out.type = [out.type, "null"];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
      if (out.type === undefined && !out.enum) return { anyOf: [out, { type: "null" }] };
    }
    return out;
  }

  /** Converts a component schema once (per strictness) and returns its definitions name. */
  #component(ref: string, strict: boolean): string {
    const base = ref.replace(/^#\/components\/schemas\//, "").replace(/[^A-Za-z0-9_.-]/g, "_");
    const name = strict ? `${base}__request` : base;
    if (!(name in this.definitions) && !this.#pending.has(name)) {
      this.#pending.add(name);
      this.definitions[name] = this.schema(resolve(this.doc, ref), strict);
      this.#pending.delete(name);
    }
    return name;
  }
}

type RawParam = { name: string; in: ContractParam["in"]; required?: boolean; schema?: unknown };
type RawMedia = { schema?: unknown; example?: unknown; examples?: Record<string, unknown> };

/** The compact contract of `doc` (run in Node by vitest.config.ts). */
export function buildContract(doc: Doc, packageVersion: string): Contract {
  const convert = new Converter(doc);
  const implemented = new Set<string>(IMPLEMENTED_OPERATIONS);
  const operations: ContractOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const shared = (item.parameters as unknown[] | undefined) ?? [];
    for (const method of METHODS) {
      const op = item[method] as
        { operationId: string; parameters?: unknown[]; requestBody?: unknown; responses?: Record<string, unknown> } | undefined;
      if (!op) continue;
      const key = `${method.toUpperCase()} ${path}`;
      const params = [...shared, ...(op.parameters ?? [])].map((p) => {
        const param = deref<RawParam>(doc, p);
        return { name: param.name, in: param.in, required: param.required === true, schema: convert.schema(param.schema ?? {}, false) };
      });
      const entry: ContractOperation = { key, method: method.toUpperCase(), path, operationId: op.operationId, params };
      if (op.requestBody) {
        const body = deref<{ required?: boolean; content?: Record<string, RawMedia> }>(doc, op.requestBody);
        const mediaTypes = Object.keys(body.content ?? {});
        const json = body.content?.["application/json"];
        entry.body = {
          required: body.required === true,
          mediaTypes,
          ...(json?.schema ? { schema: convert.schema(json.schema, true) } : {}),
        };
      }
      if (implemented.has(key)) {
        entry.responses = {};
        for (const [status, raw] of Object.entries(op.responses ?? {})) {
          const response = deref<{ content?: Record<string, RawMedia> }>(doc, raw);
          const media = response.content?.["application/json"];
          const firstExample = media?.examples ? deref<{ value?: unknown }>(doc, Object.values(media.examples)[0])?.value : media?.example;
          entry.responses[status] = {
            ...(media?.schema ? { schema: convert.schema(media.schema, false) } : {}),
            ...(firstExample !== undefined ? { example: firstExample } : {}),
          };
        }
      }
      operations.push(entry);
    }
  }
  const missing = IMPLEMENTED_OPERATIONS.filter((k) => !operations.some((o) => o.key === k));
  if (missing.length) throw new Error(`GitHub's description has no ${missing.join(", ")}`);
  return {
    source: `api.github.com ${doc.info.version} (@octokit/openapi ${packageVersion})`,
    operations,
    definitions: convert.definitions,
  };
}

/** The ES module vitest.config.ts serves as `virtual:github-contract`. */
export function contractModule(contract: Contract): string {
  return `export default JSON.parse(${JSON.stringify(JSON.stringify(contract))});`;
}
