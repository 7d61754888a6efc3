/**
 * Fuzzing from the document: every operation of /openapi.json gets generated valid inputs (from
 * its parameter and body schemas) and invalid ones (a wrong JSON type, a missing required member, a
 * parameter outside its pattern or type). Whatever comes back: no 5xx; every 4xx is problem+json
 * with a `code`; and a refused request leaves D1 exactly as it was (row counts of every table).
 * The operations and cases covered are printed (docs/api.md records a run).
 */
import { env, exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, createRunner } from "../../factories";
import { registerNode } from "../../factories/nodes";
import { valid, wrongTypeFor, type Schema } from "./arbitraries";

const BASE = "http://crewplane.test";
const SEED = 20261204;
const VALID_RUNS = 2;
const SEALED_BEHIND = new Set(["audit_chain", "audit_checkpoints"]);

interface Operation {
  method: string;
  path: string;
  parameters?: { name: string; in: string; required?: boolean; schema: Schema }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
  security?: Record<string, string[]>[];
}

interface Input {
  path: Record<string, string>;
  query: Record<string, string>;
  body?: string;
}

let operations: Operation[] = [];
const tokens: Record<string, string> = {};

/** Row counts of every table: a refused request must leave every one as it was. */
let tables: string[] = [];
async function fingerprint(): Promise<Record<string, number>> {
  if (tables.length === 0) {
    const { results } = await env.DB.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%'",
    ).all<{ name: string }>();
    // The audit chain is sealed after each request, in the background, from the events earlier
    // requests appended: it moves on its own. The events table itself is counted.
    tables = results.map((r) => r.name).filter((t) => !SEALED_BEHIND.has(t));
  }
  const counts = await env.DB.batch(tables.map((t) => env.DB.prepare(`SELECT count(*) AS n FROM "${t}"`)));
  return Object.fromEntries(tables.map((t, i) => [t, (counts[i]!.results[0] as { n: number }).n]));
}

function tokenFor(op: Operation): string | null {
  const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
  if (schemes.length === 0) return null;
  if (schemes.includes("operatorToken")) return ADMIN_TOKEN;
  if (schemes.includes("runnerToken")) return tokens.runner!;
  if (schemes.includes("nodeToken")) return tokens.node!;
  return ADMIN_TOKEN;
}

async function send(op: Operation, input: Input) {
  let url = op.path;
  for (const [name, value] of Object.entries(input.path)) url = url.replace(`{${name}}`, encodeURIComponent(value));
  const query = new URLSearchParams(input.query).toString();
  const headers: Record<string, string> = { accept: "application/json" };
  const token = tokenFor(op);
  if (token) headers.authorization = `Bearer ${token}`;
  if (input.body !== undefined) headers["content-type"] = "application/json";
  const res = await exports.default.fetch(`${BASE}${url}${query ? `?${query}` : ""}`, {
    method: op.method.toUpperCase(),
    headers,
    body: input.body,
  });
  return { status: res.status, type: res.headers.get("content-type") ?? "", text: await res.text() };
}

/** The answer's defects, if any (a 4xx also gets its D1 compared by the caller). */
function defects(op: Operation, input: Input, res: { status: number; type: string; text: string }): string[] {
  const where = `${op.method.toUpperCase()} ${op.path} ${JSON.stringify(input).slice(0, 300)} → ${res.status}`;
  if (res.status >= 500) return [`${where}: server error ${res.text.slice(0, 200)}`];
  if (res.status >= 400) {
    // A page's form post is refused with a page for the browser, carrying the same stable code.
    if (res.type.startsWith("text/html")) return /data-code="[a-z_]+"/.test(res.text) ? [] : [`${where}: an HTML refusal without its code`];
    if (!res.type.startsWith("application/problem+json")) return [`${where}: ${res.type} instead of problem+json`];
    const code = (JSON.parse(res.text) as { code?: unknown }).code;
    if (typeof code !== "string" || code === "") return [`${where}: no code`];
  }
  return [];
}

const paramsIn = (op: Operation, where: string) => (op.parameters ?? []).filter((p) => p.in === where);
const bodySchema = (op: Operation) => op.requestBody?.content["application/json"]?.schema;
const asText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

function validInput(op: Operation): fc.Arbitrary<Input> {
  const path = Object.fromEntries(
    paramsIn(op, "path").map((p) => [
      p.name,
      valid(p.schema)
        .map(asText)
        .filter((s) => s !== ""),
    ]),
  );
  const query = paramsIn(op, "query").filter((p) => p.schema.type !== "array" && p.schema.type !== "object");
  const body = bodySchema(op);
  return fc.record({
    path: fc.record(path),
    query: fc.record(Object.fromEntries(query.map((p) => [p.name, valid(p.schema).map(asText)])), {
      requiredKeys: query.filter((p) => p.required).map((p) => p.name),
    }) as fc.Arbitrary<Record<string, string>>,
    body: body ? valid(body).map((b) => JSON.stringify(b)) : fc.constant(undefined),
  }) as fc.Arbitrary<Input>;
}

/** Inputs that break the schema in one place each, built from one valid sample. */
function invalidInputs(op: Operation, base: Input): { what: string; input: Input }[] {
  const out: { what: string; input: Input }[] = [];
  const body = bodySchema(op);
  if (body) {
    out.push({ what: "body of the wrong JSON type", input: { ...base, body: "[1,2,3]" } });
    out.push({ what: "body that is not JSON", input: { ...base, body: "{not json" } });
    const sample = JSON.parse(base.body ?? "{}") as Record<string, unknown>;
    const required = ((body.required as string[] | undefined) ?? [])[0];
    if (required && sample && typeof sample === "object") {
      const { [required]: _gone, ...rest } = sample;
      out.push({ what: `body without required ${required}`, input: { ...base, body: JSON.stringify(rest) } });
    }
    const typed = Object.entries((body.properties ?? {}) as Record<string, Schema>).find(([, s]) => wrongTypeFor(s) !== null);
    if (typed)
      out.push({
        what: `body.${typed[0]} of the wrong type`,
        input: { ...base, body: JSON.stringify({ ...sample, [typed[0]]: wrongTypeFor(typed[1]) }) },
      });
  }
  for (const p of paramsIn(op, "query")) {
    const s = p.schema;
    if (s.type === "integer" || s.type === "number" || s.enum || s.pattern) {
      out.push({ what: `query ${p.name} outside its schema`, input: { ...base, query: { ...base.query, [p.name]: "not-valid-%" } } });
    }
  }
  for (const p of paramsIn(op, "path")) {
    if (p.schema.pattern || p.schema.enum || p.schema.maxLength) {
      out.push({
        what: `path ${p.name} outside its schema`,
        input: { ...base, path: { ...base.path, [p.name]: "!".repeat((p.schema.maxLength ?? 64) + 1) } },
      });
    }
  }
  return out;
}

beforeAll(async () => {
  const doc = (await (await exports.default.fetch(`${BASE}/openapi.json`)).json()) as { paths: Record<string, Record<string, Operation>> };
  operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ ...op, method, path })));
  tokens.runner = (await createRunner("fuzz-runner")).token;
  tokens.node = (await registerNode({ name: "fuzz-node" })).token;
});

describe("fuzzing every operation of /openapi.json", () => {
  it("answers generated valid and invalid inputs without a 5xx, with problem+json for every 4xx, and changes nothing when it refuses", async () => {
    const found: string[] = [];
    const coverage: { operation: string; valid: number; invalid: string[]; skipped?: string }[] = [];
    for (const op of operations) {
      const name = `${op.method.toUpperCase()} ${op.path}`;
      const streams = Object.values(op.responses).some((r) => Object.keys(r.content ?? {}).includes("text/event-stream"));
      if (streams) {
        coverage.push({ operation: name, valid: 0, invalid: [], skipped: "answers a never-ending event stream" });
        continue;
      }
      const samples = fc.sample(validInput(op), { numRuns: VALID_RUNS, seed: SEED });
      const invalid = invalidInputs(op, samples[0]!);
      const cases = [...samples.map((input) => ({ what: "valid", input })), ...invalid];
      for (const { input } of cases) {
        const before = await fingerprint();
        const res = await send(op, input);
        found.push(...defects(op, input, res));
        if (res.status >= 400 && res.status < 500) {
          const after = await fingerprint();
          const changed = Object.keys(after).filter((t) => after[t] !== before[t]);
          if (changed.length > 0)
            found.push(`${name} ${JSON.stringify(input).slice(0, 300)} → ${res.status} changed ${changed.join(", ")}`);
        }
      }
      coverage.push({ operation: name, valid: samples.length, invalid: invalid.map((c) => c.what) });
    }
    const cases = coverage.reduce((n, c) => n + c.valid + c.invalid.length, 0);
    console.log(
      `fuzz: ${coverage.filter((c) => !c.skipped).length} operations, ${cases} cases, ${coverage.filter((c) => c.skipped).length} skipped (seed ${SEED})`,
    );
    console.log(
      coverage
        .map(
          (c) =>
            `${c.operation}: ${c.skipped ? `skipped, ${c.skipped}` : `${c.valid} valid; ${c.invalid.join("; ") || "no invalid case"}`}`,
        )
        .join("\n"),
    );
    expect(found).toEqual([]);
    expect(operations.length).toBeGreaterThan(150);
  }, 600_000);
});
