/**
 * The crewplane MCP server a CLI starts through its own MCP config: a team member's (seed 002; issue
 * 11 item 6) or the employee's own turn's (seed 003 §7; issue 21 item 5). Identity comes only from
 * the config file (`member.json`, or the employee turn's `employee-identity.json`): tools never
 * accept a task, round, role, employee or path. Each tool the caller was not given is not even
 * registered, and the two kinds of identity can only list their own tools.
 * Member tools:
 * - `team_handoff` → POST /v1/team/handoff with the member token (the Worker derives leg and slot);
 * - `memory_search`, `wiki_search`, `wiki_read` → the employee's memory and wiki on the Worker;
 * - `working_state_read` / `working_state_write` → one derived file in the employee workspace that
 *   outlives the round's scaffold.
 * Employee tools (the employee token, scoped by the Worker to this employee and this job):
 * - `evolution_status` → GET /v1/employees/{id}/evolution;
 * - `evolution_toggle` → POST /v1/employees/{id}/evolution/toggle `{key, value}`; the Worker refuses
 *   keys it does not allow (`cognitive_memory`: 422 `not_toggleable`), so the runner keeps no list.
 */
import { appendFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { EMPLOYEE_TOOLS, MEMBER_TOOLS } from "../members/tools.ts";
import type { CrewplaneTool } from "../members/tools.ts";
import { ROLES } from "../runtimes/types.ts";

export const memberConfigSchema = z.object({
  /** Absent in every member.json written so far: a config without `kind` is a member's. */
  kind: z.literal("member").optional(),
  api_url: z.url(),
  member_token: z.string().min(1),
  employee_id: z.string().min(1),
  task_id: z.string().min(1),
  round: z.number().int().nonnegative(),
  role: z.enum(ROLES),
  tools: z.array(z.enum(MEMBER_TOOLS)),
  working_state_path: z.string().min(1),
  expires_at: z.string().optional(),
  calls_log_path: z.string().min(1).optional(),
});
export type MemberIdentity = z.infer<typeof memberConfigSchema>;

/** The employee's own turn (jobs/employee-turn.ts writes it into the job's work dir, 0600). */
export const employeeConfigSchema = z.object({
  kind: z.literal("employee"),
  api_url: z.url(),
  employee_token: z.string().min(1),
  employee_id: z.string().min(1),
  tools: z.array(z.enum(EMPLOYEE_TOOLS)),
  expires_at: z.string().optional(),
  calls_log_path: z.string().min(1).optional(),
});
export type EmployeeIdentity = z.infer<typeof employeeConfigSchema>;

export type CrewplaneIdentity = MemberIdentity | EmployeeIdentity;

/** Reads an identity file's JSON: `kind: "employee"` is the employee's, anything else a member's. */
export function parseIdentity(
  value: unknown,
): ReturnType<typeof employeeConfigSchema.safeParse> | ReturnType<typeof memberConfigSchema.safeParse> {
  const kind = value !== null && typeof value === "object" ? (value as { kind?: unknown }).kind : undefined;
  return kind === "employee" ? employeeConfigSchema.safeParse(value) : memberConfigSchema.safeParse(value);
}

export interface ServerDeps {
  fetch?: typeof fetch;
  /** Per HTTP call. */
  timeoutMs?: number;
}

/**
 * One line of the member's call log (`calls_log_path`): what the server itself served, read by the
 * runner after the CLI exits. It is the `mcp_only` evidence (seed 002: the member has an audit row
 * in its dispatch window) and the record of which packets, declaring which artifacts, really reached
 * the Worker — independent of what the CLI's own stream chose to show.
 */
export interface McpCallRecord {
  tool: string;
  ok: boolean;
  at: string;
  status?: number;
  packet_id?: string;
  leg?: string;
  slot?: string;
  artifacts?: Array<{ path?: string; sha256?: string; bytes?: number }>;
}

/** Where each role hands off when the packet does not say (the legs the Worker serves). */
const DEFAULT_TO_ROLE: Record<string, string> = { planner: "executor", executor: "verifier", verifier: "executor", utility: "executor" };

const RESPONSE_LIMIT = 100_000;
const WORKING_STATE_LIMIT = 64 * 1024;
const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const PACKET_DESCRIPTION = [
  "A TaskPacket: the only thing that crosses a role boundary. Typical fields: packet_id (reuse it to",
  "overwrite your own earlier packet; a new id takes the next slot), to_role (planner|executor|verifier),",
  "objective, output_format, constraints[], audience[], acceptance[] (assertions), artifacts[] ({path",
  "relative to the workspace, sha256?, bytes?}), findings[] (each with an evidence reference),",
  "open_questions[], next_steps[], dependencies[]. Never put transcripts, tool-call blocks or reasoning in it.",
  "Who you are (task, round, role) is known to the server; it is never part of the packet.",
].join(" ");

export function createCrewplaneMcpServer(identity: CrewplaneIdentity, deps: ServerDeps = {}): McpServer {
  const server = new McpServer({ name: "crewplane", version: "0.1.0" });
  const doFetch = deps.fetch ?? fetch;
  const timeoutMs = deps.timeoutMs ?? 30_000;
  const token = identity.kind === "employee" ? identity.employee_token : identity.member_token;
  const has = (tool: CrewplaneTool): boolean => (identity.tools as readonly CrewplaneTool[]).includes(tool);
  const employeePath = `/v1/employees/${encodeURIComponent(identity.employee_id)}`;

  const record = async (entry: Omit<McpCallRecord, "at">): Promise<void> => {
    if (!identity.calls_log_path) return;
    // Best effort: a log that cannot be written loses evidence, never the call itself.
    await appendFile(identity.calls_log_path, `${JSON.stringify({ ...entry, at: new Date().toISOString() })}\n`, { mode: 0o600 }).catch(
      () => undefined,
    );
  };

  const call = async (
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<CallToolResult & { status?: number; json?: unknown }> => {
    let response: Response;
    try {
      response = await doFetch(new URL(path, identity.api_url), {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      return failure(`crewplane could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    }
    const text = await response.text().catch(() => "");
    if (!response.ok) return { ...failure(describeProblem(response.status, text)), status: response.status };
    return { content: [{ type: "text", text: clip(pretty(text)) }], status: response.status, json: parseJson(text) };
  };
  /** Calls the Worker and logs the call; the MCP result carries only content and isError. */
  const served = async (tool: string, method: "GET" | "POST", path: string, body?: unknown): Promise<CallToolResult> => {
    const { status, json: _json, ...result } = await call(method, path, body);
    await record({ tool, ok: result.isError !== true, ...(status !== undefined ? { status } : {}) });
    return result;
  };

  if (identity.kind === "employee") {
    registerEmployeeTools(server, has, served, employeePath);
    return server;
  }
  // From here on `identity` is a member's.
  if (has("team_handoff")) {
    server.registerTool(
      "team_handoff",
      {
        title: "Hand a TaskPacket to the next role",
        description: `Store one TaskPacket for the next role of this team round. ${PACKET_DESCRIPTION}`,
        inputSchema: { packet: z.record(z.string(), z.unknown()).describe(PACKET_DESCRIPTION) },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async ({ packet }) => {
        // Who hands off is this member, from its own config: goal_id, round and from_role are filled
        // in (a model's own guess at them is replaced), and the Worker checks them against the token's pin.
        const own: Record<string, unknown> = {
          ...packet,
          goal_id: identity.task_id,
          round: identity.round,
          from_role: identity.role,
          to_role: typeof packet.to_role === "string" ? packet.to_role : DEFAULT_TO_ROLE[identity.role],
        };
        const { status, json, ...result } = await call("POST", "/v1/team/handoff", { packet: own });
        const stored = json as { leg?: unknown; slot?: unknown; packet_id?: unknown } | undefined;
        await record({
          tool: "team_handoff",
          ok: result.isError !== true,
          ...(status !== undefined ? { status } : {}),
          ...(typeof own.packet_id === "string" ? { packet_id: own.packet_id } : {}),
          ...(typeof stored?.leg === "string" ? { leg: stored.leg } : {}),
          ...(typeof stored?.slot === "string" ? { slot: stored.slot } : {}),
          ...(result.isError !== true ? { artifacts: declaredArtifacts(own.artifacts) } : {}),
        });
        return result;
      },
    );
  }
  if (has("memory_search")) {
    server.registerTool(
      "memory_search",
      {
        description: "Search this employee's memory entries (full-text). Returns the best matches.",
        inputSchema: { q: z.string().min(1).max(500), limit: z.number().int().min(1).max(50).optional() },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async ({ q, limit }) => served("memory_search", "GET", `${employeePath}/memory?${query({ q, limit })}`),
    );
  }
  if (has("wiki_search")) {
    server.registerTool(
      "wiki_search",
      {
        description: "Search this employee's wiki pages (full-text). Returns slugs and snippets; read a page with wiki_read.",
        inputSchema: { q: z.string().min(1).max(500), limit: z.number().int().min(1).max(50).optional() },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async ({ q, limit }) => served("wiki_search", "GET", `${employeePath}/wiki?${query({ q, limit })}`),
    );
  }
  if (has("wiki_read")) {
    server.registerTool(
      "wiki_read",
      {
        description: "Read one page of this employee's wiki by its slug.",
        inputSchema: { slug: z.string().regex(SLUG, "a wiki slug: letters, digits, '.', '_' and '-'") },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async ({ slug }) => served("wiki_read", "GET", `${employeePath}/wiki/${encodeURIComponent(slug)}`),
    );
  }
  if (has("working_state_read")) {
    server.registerTool(
      "working_state_read",
      {
        description: "Read this task's working state (notes kept across rounds of the same task).",
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async () => {
        const text = await readFile(identity.working_state_path, "utf8").catch((err: NodeJS.ErrnoException) => {
          if (err.code === "ENOENT") return undefined;
          throw err;
        });
        await record({ tool: "working_state_read", ok: true });
        return { content: [{ type: "text", text: text ?? "(no working state yet)" }] };
      },
    );
  }
  if (has("working_state_write")) {
    server.registerTool(
      "working_state_write",
      {
        description: `Replace this task's working state (at most ${WORKING_STATE_LIMIT} characters).`,
        inputSchema: { content: z.string().max(WORKING_STATE_LIMIT) },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async ({ content }) => {
        await mkdir(dirname(identity.working_state_path), { recursive: true });
        const temp = `${identity.working_state_path}.${process.pid}.tmp`;
        await writeFile(temp, content, { mode: 0o600 });
        await rename(temp, identity.working_state_path);
        await record({ tool: "working_state_write", ok: true });
        return { content: [{ type: "text", text: `working state saved (${content.length} characters)` }] };
      },
    );
  }
  return server;
}

type Served = (tool: string, method: "GET" | "POST", path: string, body?: unknown) => Promise<CallToolResult>;

/** The employee's evolution tools (seed 003 §7). Who the employee is stays the token's and the config's business. */
function registerEmployeeTools(server: McpServer, has: (tool: CrewplaneTool) => boolean, served: Served, employeePath: string): void {
  if (has("evolution_status")) {
    server.registerTool(
      "evolution_status",
      {
        title: "Your evolution engine: config and status",
        description:
          "Show your own evolution engine: its config (which flags are on), status, thresholds, counters, " +
          "cooldown, the last trigger and recent routes and requests.",
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async () => served("evolution_status", "GET", `${employeePath}/evolution`),
    );
  }
  if (has("evolution_toggle")) {
    server.registerTool(
      "evolution_toggle",
      {
        title: "Turn one of your evolution flags on or off",
        description:
          "Set one flag of your own evolution engine, e.g. gvu_enabled. Some keys cannot be set " +
          "(cognitive_memory is always on): crewplane refuses them and lists the keys that can be toggled.",
        inputSchema: {
          key: z.string().min(1).max(100).describe("The flag to set, e.g. gvu_enabled"),
          value: z.boolean().describe("true turns it on, false off"),
        },
        // Setting a flag to the value it has changes nothing, and either value can be set back.
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async ({ key, value }) => served("evolution_toggle", "POST", `${employeePath}/evolution/toggle`, { key, value }),
    );
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The artifact declarations of a packet as sent (paths and claimed hashes), for the runner's receipts. */
function declaredArtifacts(value: unknown): NonNullable<McpCallRecord["artifacts"]> {
  if (!Array.isArray(value)) return [];
  return value.slice(0, 64).flatMap((a) => {
    if (a === null || typeof a !== "object") return [];
    const { path, sha256, bytes } = a as Record<string, unknown>;
    return [
      {
        ...(typeof path === "string" ? { path } : {}),
        ...(typeof sha256 === "string" ? { sha256 } : {}),
        ...(typeof bytes === "number" ? { bytes } : {}),
      },
    ];
  });
}

function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) search.set(key, String(value));
  return search.toString();
}

function failure(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: clip(text) }] };
}

/**
 * The Worker's problem+json, made readable for the model: code, detail, the refusal's `reason`
 * token and `toggleable` keys when present (evolution_toggle's 422), and each field error.
 */
function describeProblem(status: number, body: string): string {
  try {
    const problem = JSON.parse(body) as {
      code?: string;
      detail?: string;
      reason?: unknown;
      toggleable?: unknown;
      errors?: Array<{ path?: unknown; message?: string }>;
    };
    const fields = (problem.errors ?? []).map(
      (e) => `  - ${Array.isArray(e.path) ? e.path.join(".") : String(e.path ?? "")}: ${e.message ?? ""}`,
    );
    const reason = typeof problem.reason === "string" ? [`reason: ${problem.reason}`] : [];
    const toggleable = Array.isArray(problem.toggleable) ? [`toggleable: ${problem.toggleable.map(String).join(", ")}`] : [];
    return [
      `crewplane refused the call (${status} ${problem.code ?? "error"}): ${problem.detail ?? ""}`,
      ...reason,
      ...toggleable,
      ...fields,
    ].join("\n");
  } catch {
    return `crewplane refused the call (${status}): ${body.slice(0, 500)}`;
  }
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function clip(text: string): string {
  return text.length > RESPONSE_LIMIT ? `${text.slice(0, RESPONSE_LIMIT)}\n…(truncated)` : text;
}
