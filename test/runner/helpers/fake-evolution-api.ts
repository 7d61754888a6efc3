/**
 * A stand-in for the Worker's evolution endpoints the employee's own crewplane MCP server calls
 * (issue 21 item 5), on 127.0.0.1 with an ephemeral port: `GET /v1/employees/{id}/evolution` and
 * `POST /v1/employees/{id}/evolution/toggle` with an employee token scoped to one employee. Keys
 * outside the toggleable list (`cognitive_memory` among them) get 422 `not_toggleable`, as the
 * Worker's own list (src/evolution/config.ts TOGGLEABLE) has it.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export const TOGGLEABLE = ["gvu_enabled", "skill_auto_activate", "skill_security_scan", "legacy_soul_evolution"];

export interface EvolutionRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

export interface FakeEvolutionApi {
  url: string;
  requests: EvolutionRequest[];
  /** Per employee, the flags as the fake holds them. */
  flags: Record<string, Record<string, boolean>>;
  /** A token of the Worker's shape (`mbr_<16 hex>.<64 hex>`) scoped to this employee. */
  mint(employeeId: string): string;
  close(): Promise<void>;
}

export async function startFakeEvolutionApi(): Promise<FakeEvolutionApi> {
  const requests: EvolutionRequest[] = [];
  const tokens = new Map<string, string>();
  const flags: FakeEvolutionApi["flags"] = {};
  const config = (id: string) => ({ gvu_enabled: false, cognitive_memory: true, ...flags[id] });

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const url = new URL(req.url ?? "/", "http://x");
    requests.push({ method: req.method ?? "", path: url.pathname, authorization: req.headers.authorization, body });
    const send = (status: number, payload: unknown): void => {
      res.writeHead(status, { "content-type": status >= 400 ? "application/problem+json" : "application/json" });
      res.end(JSON.stringify(payload));
    };
    const problem = (status: number, code: string, detail: string, extra: Record<string, unknown> = {}): void =>
      send(status, { ...extra, type: `https://crewplane.dev/problems/${code}`, title: code, status, detail, code });

    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const owner = token ? tokens.get(token) : undefined;
    if (!owner) return problem(401, "unauthorized", "invalid or expired employee token");
    const match = /^\/v1\/employees\/([^/]+)\/evolution(\/toggle)?$/.exec(url.pathname);
    if (!match) return problem(404, "not_found", "no such endpoint");
    const id = decodeURIComponent(match[1]!);
    if (id !== owner) return problem(403, "forbidden", "an employee token reaches only its own employee");

    if (req.method === "GET" && !match[2]) {
      const cfg = config(id);
      return send(200, {
        employee_id: id,
        config: cfg,
        status: cfg.gvu_enabled ? "enabled" : "disabled",
        thresholds: { error: 0.35 },
        counters: { conversations: 3 },
        cooldown: null,
        last_trigger: null,
        recent_routes: [],
        recent_requests: [],
      });
    }
    if (req.method === "POST" && match[2]) {
      const { key, value } = (body ?? {}) as { key?: unknown; value?: unknown };
      if (typeof key !== "string" || typeof value !== "boolean") return problem(422, "validation_failed", "key and value are required");
      if (!TOGGLEABLE.includes(key)) {
        return problem(422, "validation_failed", `${key} cannot be toggled`, { reason: "not_toggleable", toggleable: TOGGLEABLE });
      }
      flags[id] = { ...flags[id], [key]: value };
      return send(200, { employee_id: id, key, value, config: config(id) });
    }
    return problem(405, "method_not_allowed", "method not allowed");
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    flags,
    mint(employeeId) {
      const token = `mbr_${randomBytes(8).toString("hex")}.${randomBytes(32).toString("hex")}`;
      tokens.set(token, employeeId);
      return token;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
