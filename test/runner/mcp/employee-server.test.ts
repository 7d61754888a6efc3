/**
 * The crewplane MCP server with an employee identity (issue 21 item 5): the employee's own
 * `evolution_status` and `evolution_toggle`, in process against a fake fetch, and as the stdio
 * process its CLI starts from the identity file an employee turn writes.
 */
import { readFileSync, statSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";
import { createCrewplaneMcpServer, parseIdentity } from "../../../local-runner/src/mcp/server.ts";
import type { EmployeeIdentity } from "../../../local-runner/src/mcp/server.ts";
import { writeEmployeeMcp } from "../../../local-runner/src/members/employee-mcp.ts";
import { MEMBER_CONFIG_ENV } from "../../../local-runner/src/members/scaffold.ts";
import { startFakeEvolutionApi, TOGGLEABLE } from "../helpers/fake-evolution-api.ts";
import { tempDir } from "../helpers/paths.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

const TOKEN = `mbr_${"a1".repeat(8)}.${"b2".repeat(32)}`;
const API = "https://crewplane.test";

interface Seen {
  method: string;
  url: string;
  authorization: string | null;
  contentType: string | null;
  body: unknown;
}

/** A fetch that answers from `routes` (`"GET /path"` → [status, body]) and records every call. */
function fakeFetch(routes: Record<string, [number, unknown]>) {
  const seen: Seen[] = [];
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const headers = new Headers(init?.headers);
    const method = init?.method ?? "GET";
    seen.push({
      method,
      url: url.toString(),
      authorization: headers.get("authorization"),
      contentType: headers.get("content-type"),
      body: typeof init?.body === "string" ? JSON.parse(init.body) : undefined,
    });
    const route = routes[`${method} ${url.pathname}`];
    if (!route) return new Response(JSON.stringify({ code: "not_found", detail: "no route" }), { status: 404 });
    const [status, body] = route;
    return new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": status >= 400 ? "application/problem+json" : "application/json" },
    });
  }) as typeof fetch;
  return { fetchImpl, seen };
}

const STATUS = {
  employee_id: "emp_1",
  config: { gvu_enabled: false, cognitive_memory: true },
  status: "disabled",
  thresholds: { error: 0.35 },
  counters: { conversations: 4 },
  cooldown: null,
  last_trigger: null,
  recent_routes: [],
  recent_requests: [],
};

async function connect(identity: Partial<EmployeeIdentity> = {}, routes: Record<string, [number, unknown]> = {}) {
  const { fetchImpl, seen } = fakeFetch(routes);
  const full: EmployeeIdentity = {
    kind: "employee",
    api_url: API,
    employee_token: TOKEN,
    employee_id: "emp_1",
    tools: ["evolution_status", "evolution_toggle"],
    ...identity,
  };
  const server = createCrewplaneMcpServer(full, { fetch: fetchImpl, timeoutMs: 5_000 });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "0" });
  await client.connect(clientSide);
  teardown.push(() => client.close());
  const callTool = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }> };
    return { isError: result.isError === true, text: result.content.map((c) => c.text).join("\n") };
  };
  return { client, callTool, seen };
}

describe("crewplane MCP server with an employee identity", () => {
  it.each([
    [
      ["evolution_status", "evolution_toggle"],
      ["evolution_status", "evolution_toggle"],
    ],
    [["evolution_status"], ["evolution_status"]],
    [[], []],
  ] as const)("registers exactly the tools the identity lists (%j), and none of a member's", async (tools, expected) => {
    const { client } = await connect({ tools: [...tools] });
    // A server with no tool at all has no tools capability: listing fails, and nothing can be called.
    const listed = await client.listTools().then(
      (r) => r.tools.map((t) => t.name),
      () => [] as string[],
    );
    expect(listed.sort()).toEqual([...expected]);
  });

  it("refuses an employee identity that lists a member's tool, and a member identity that lists an employee's", () => {
    const employee = { kind: "employee", api_url: API, employee_token: TOKEN, employee_id: "emp_1" };
    expect(parseIdentity({ ...employee, tools: ["evolution_status"] }).success).toBe(true);
    expect(parseIdentity({ ...employee, tools: ["team_handoff"] }).success).toBe(false);
    const member = {
      api_url: API,
      member_token: "member_x.y",
      employee_id: "emp_1",
      task_id: "task_1",
      round: 1,
      role: "executor",
      working_state_path: "/tmp/ws.md",
    };
    expect(parseIdentity({ ...member, tools: ["team_handoff"] }).success).toBe(true);
    expect(parseIdentity({ ...member, tools: ["evolution_toggle"] }).success).toBe(false);
    // Without `kind` a file is a member's, so an employee file that lost its kind is refused too.
    expect(parseIdentity({ ...employee, kind: undefined, tools: ["evolution_status"] }).success).toBe(false);
  });

  it("evolution_status GETs the employee's evolution with the employee token and returns its JSON", async () => {
    const { callTool, seen } = await connect({}, { "GET /v1/employees/emp_1/evolution": [200, STATUS] });
    const result = await callTool("evolution_status");
    expect(result.isError).toBe(false);
    expect(JSON.parse(result.text)).toEqual(STATUS);
    expect(seen).toEqual([
      {
        method: "GET",
        url: `${API}/v1/employees/emp_1/evolution`,
        authorization: `Bearer ${TOKEN}`,
        contentType: null,
        body: undefined,
      },
    ]);
  });

  it("evolution_toggle POSTs {key, value} to the toggle endpoint and returns the Worker's answer", async () => {
    const answer = { employee_id: "emp_1", key: "gvu_enabled", value: true, config: { ...STATUS.config, gvu_enabled: true } };
    const { callTool, seen } = await connect({}, { "POST /v1/employees/emp_1/evolution/toggle": [200, answer] });
    const result = await callTool("evolution_toggle", { key: "gvu_enabled", value: true });
    expect(result.isError).toBe(false);
    expect(JSON.parse(result.text)).toEqual(answer);
    expect(seen).toEqual([
      {
        method: "POST",
        url: `${API}/v1/employees/emp_1/evolution/toggle`,
        authorization: `Bearer ${TOKEN}`,
        contentType: "application/json",
        body: { key: "gvu_enabled", value: true },
      },
    ]);
  });

  it("takes who the employee is from its config only: extra arguments change neither the path nor the body", async () => {
    const { callTool, seen } = await connect({}, { "POST /v1/employees/emp_1/evolution/toggle": [200, { ok: true }] });
    await callTool("evolution_toggle", { key: "gvu_enabled", value: false, employee_id: "emp_2", api_url: "https://evil.test" });
    expect(seen.map((s) => s.url)).toEqual([`${API}/v1/employees/emp_1/evolution/toggle`]);
    expect(seen[0]!.body).toEqual({ key: "gvu_enabled", value: false });
  });

  it("refuses a toggle without a boolean value before any request", async () => {
    const { callTool, seen } = await connect();
    const result = await callTool("evolution_toggle", { key: "gvu_enabled", value: "yes" });
    expect(result.isError).toBe(true);
    expect(seen).toEqual([]);
  });

  it("returns the Worker's not_toggleable refusal as a tool error naming the reason and the keys that can be toggled", async () => {
    const refusal = {
      type: "https://crewplane.dev/problems/validation_failed",
      title: "Validation failed",
      status: 422,
      code: "validation_failed",
      detail: "cognitive_memory cannot be toggled",
      reason: "not_toggleable",
      toggleable: TOGGLEABLE,
    };
    const { callTool } = await connect({}, { "POST /v1/employees/emp_1/evolution/toggle": [422, refusal] });
    const result = await callTool("evolution_toggle", { key: "cognitive_memory", value: false });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("422 validation_failed");
    expect(result.text).toContain("cognitive_memory cannot be toggled");
    expect(result.text).toContain("reason: not_toggleable");
    expect(result.text).toContain(`toggleable: ${TOGGLEABLE.join(", ")}`);
  });

  it.each([
    [401, "unauthorized", "token expired"],
    [403, "forbidden", "not this employee"],
  ])("returns a %i from the Worker as a tool error with its detail", async (status, code, detail) => {
    const { callTool } = await connect({}, { "GET /v1/employees/emp_1/evolution": [status, { status, code, detail }] });
    const result = await callTool("evolution_status");
    expect(result.isError).toBe(true);
    expect(result.text).toContain(`${status} ${code}`);
    expect(result.text).toContain(detail);
    expect(result.text).not.toContain(TOKEN);
  });

  it("logs each call it served to calls_log_path", async () => {
    const { dir, cleanup } = tempDir("crewplane-emp-mcp-");
    teardown.push(cleanup);
    const log = `${dir}/calls.jsonl`;
    const { callTool } = await connect({ calls_log_path: log }, { "GET /v1/employees/emp_1/evolution": [200, STATUS] });
    await callTool("evolution_status");
    await callTool("evolution_toggle", { key: "cognitive_memory", value: true });
    const lines = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toMatchObject([
      { tool: "evolution_status", ok: true, status: 200 },
      { tool: "evolution_toggle", ok: false, status: 404 },
    ]);
  });
});

describe("the stdio server an employee's CLI starts", () => {
  it("serves the employee named by the identity file an employee turn writes, and calls the Worker with its token", async () => {
    const api = await startFakeEvolutionApi();
    teardown.push(() => api.close());
    const { dir, cleanup } = tempDir("crewplane-emp-mcp-stdio-");
    teardown.push(cleanup);
    const token = api.mint("emp_9");
    const mcp = await writeEmployeeMcp({
      workDir: dir,
      apiUrl: api.url,
      employeeId: "emp_9",
      token,
      tools: ["evolution_status", "evolution_toggle"],
    });
    expect(statSync(mcp.identityPath).mode & 0o777).toBe(0o600);
    expect(mcp.server.env).toEqual({ [MEMBER_CONFIG_ENV]: mcp.identityPath });
    // The MCP config names the identity file, never the token.
    expect(readFileSync(mcp.configPath, "utf8")).not.toContain(token);

    const transport = new StdioClientTransport({
      command: mcp.server.command,
      args: mcp.server.args,
      env: { PATH: process.env.PATH ?? "", ...mcp.server.env },
      stderr: "pipe",
    });
    const client = new Client({ name: "stdio-test", version: "0" });
    await client.connect(transport);
    teardown.push(() => client.close());
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["evolution_status", "evolution_toggle"]);
    const status = (await client.callTool({ name: "evolution_status", arguments: {} })) as {
      isError?: boolean;
      content: Array<{ text: string }>;
    };
    expect(status.isError).not.toBe(true);
    expect(JSON.parse(status.content[0]!.text)).toMatchObject({ employee_id: "emp_9", status: "disabled" });
    const refused = (await client.callTool({ name: "evolution_toggle", arguments: { key: "cognitive_memory", value: false } })) as {
      isError?: boolean;
      content: Array<{ text: string }>;
    };
    expect(refused.isError).toBe(true);
    expect(refused.content[0]!.text).toContain("reason: not_toggleable");
    expect(api.requests.map((r) => `${r.method} ${r.path} ${r.authorization === `Bearer ${token}`}`)).toEqual([
      "GET /v1/employees/emp_9/evolution true",
      "POST /v1/employees/emp_9/evolution/toggle true",
    ]);
  });
});
