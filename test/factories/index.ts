import { env, exports } from "cloudflare:workers";
import { getDb } from "../../src/db/client";
import type { CredentialKind, OperatorRole } from "../../src/db/schema";
import { mintCredential } from "../../src/lib/credentials";
import { expectConforms } from "./contract";

export const ADMIN_TOKEN = "test-admin-token";
const BASE = "http://crewplane.test";

export interface CallOptions {
  method?: string;
  token?: string | null;
  body?: unknown;
  rawBody?: string;
}

/** One request through the real Worker entry point (fetch handler, middleware, routers). */
export async function call(path: string, opts: CallOptions = {}) {
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (opts.rawBody !== undefined || opts.body !== undefined) {
    headers["content-type"] = "application/json";
    body = opts.rawBody ?? JSON.stringify(opts.body);
  }
  const res = await exports.default.fetch(`${BASE}${path}`, { method: opts.method ?? (body ? "POST" : "GET"), headers, body });
  const text = await res.text();
  await expectConforms(opts.method ?? (body ? "POST" : "GET"), `${BASE}${path}`, { status: res.status, headers: res.headers, text });
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as any };
}

export async function createOperator(role: OperatorRole, name = `op-${role}`): Promise<string> {
  const res = await call("/v1/admin/operators", { body: { name, role } });
  if (res.status !== 201) throw new Error(`operator: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.token;
}

export async function createRunner(name = "runner-1"): Promise<{ id: string; token: string }> {
  const res = await call("/v1/admin/runners", { body: { name } });
  if (res.status !== 201) throw new Error(`runner: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.runner_id, token: res.body.token };
}

/** Node and member tokens are minted by features that come later; tests mint them directly. */
export async function mintToken(kind: CredentialKind, opts: { subject?: string; expiresAt?: Date; role?: OperatorRole } = {}) {
  const db = getDb(env.DB);
  const cred = await mintCredential(db, { kind, name: `${kind}-test`, ...opts }, new Date());
  await cred.insert;
  return cred;
}

export function utilityJob(overrides: Record<string, unknown> = {}) {
  return { kind: "utility", runtime: "offline", prompt: "say hello", ...overrides };
}
