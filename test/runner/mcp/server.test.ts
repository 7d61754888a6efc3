/**
 * The crewplane MCP server against a local fake of the Worker's team endpoints: in process through
 * the SDK's in-memory transport, and as the real stdio process a member CLI starts.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";
import { createCrewplaneMcpServer } from "../../../local-runner/src/mcp/server.ts";
import type { MemberIdentity } from "../../../local-runner/src/mcp/server.ts";
import { DEFAULT_MCP_LAUNCH, MEMBER_CONFIG_ENV, writeScaffold } from "../../../local-runner/src/members/scaffold.ts";
import { toolsForRole } from "../../../local-runner/src/members/tools.ts";
import type { Role } from "../../../local-runner/src/runtimes/types.ts";
import { startFakeTeamApi } from "../helpers/fake-team-api.ts";
import type { FakeTeamApi } from "../helpers/fake-team-api.ts";
import { tempDir } from "../helpers/paths.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

async function setup(role: Role = "executor", overrides: Partial<MemberIdentity> = {}) {
  const api = await startFakeTeamApi();
  teardown.push(() => api.close());
  const { dir, cleanup } = tempDir("crewplane-mcp-");
  teardown.push(cleanup);
  const pin = { employeeId: "emp_1", taskId: "task_1", round: 2, role };
  const identity: MemberIdentity = {
    api_url: api.url,
    member_token: api.mint(pin),
    employee_id: "emp_1",
    task_id: "task_1",
    round: 2,
    role,
    tools: toolsForRole(role).crewplaneTools,
    working_state_path: join(dir, "agents/emp_1/state/working_state/task_1.md"),
    ...overrides,
  };
  const server = createCrewplaneMcpServer(identity, { timeoutMs: 5_000 });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "0" });
  await client.connect(clientSide);
  teardown.push(() => client.close());
  const callTool = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }> };
    return { isError: result.isError === true, text: result.content.map((c) => c.text).join("\n") };
  };
  return { api, identity, client, callTool, dir };
}

describe("crewplane MCP server tools per role", () => {
  it.each([
    ["planner", ["memory_search", "team_handoff", "wiki_search"]],
    ["executor", ["memory_search", "team_handoff", "wiki_read", "wiki_search", "working_state_read", "working_state_write"]],
    ["verifier", ["team_handoff"]],
    ["utility", ["team_handoff"]],
  ] as const)("offers a %s only its own tools", async (role, expected) => {
    const { client } = await setup(role);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...expected].sort());
  });

  it("refuses a tool the member was not given, as unknown", async () => {
    const { callTool } = await setup("verifier");
    const result = await callTool("wiki_read", { slug: "x" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/wiki_read/);
  });

  it("annotates team_handoff as a non-destructive, idempotent write (codex declines unannotated MCP tools)", async () => {
    const { client } = await setup("planner");
    const handoff = (await client.listTools()).tools.find((t) => t.name === "team_handoff");
    expect(handoff?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
    expect(handoff?.description).toContain("packet_id");
  });
});

describe("team_handoff", () => {
  it("posts the packet to /v1/team/handoff with the member token and reports leg and slot", async () => {
    const { api, identity, callTool } = await setup("planner");
    const first = await callTool("team_handoff", { packet: { packet_id: "p-1", to_role: "executor", objective: "write a.md" } });
    const second = await callTool("team_handoff", { packet: { packet_id: "p-2", to_role: "executor", objective: "write b.md" } });
    const retry = await callTool("team_handoff", { packet: { packet_id: "p-1", to_role: "executor", objective: "write a.md (again)" } });

    expect(first).toMatchObject({ isError: false });
    expect(JSON.parse(first.text)).toEqual({ leg: "planner-to-executor", slot: "", packet_id: "p-1" });
    expect(JSON.parse(second.text)).toMatchObject({ slot: ".01" });
    expect(JSON.parse(retry.text)).toMatchObject({ slot: "", packet_id: "p-1" });
    const posts = api.requests.filter((r) => r.path === "/v1/team/handoff");
    expect(posts).toHaveLength(3);
    expect(posts[0]).toMatchObject({
      method: "POST",
      authorization: `Bearer ${identity.member_token}`,
      body: { packet: { packet_id: "p-1" } },
    });
    // Only the packet travels: who is calling is the token's business.
    expect(Object.keys(posts[0]!.body)).toEqual(["packet"]);
    expect(api.packets.map((p) => p.packet.objective)).toEqual(["write a.md (again)", "write b.md"]);
  });

  it("returns the Worker's refusal with its code and field errors as a tool error", async () => {
    const { callTool } = await setup("executor");
    const result = await callTool("team_handoff", { packet: { objective: "no id" } });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("422 validation_failed");
    expect(result.text).toContain("packet.packet_id: required");
  });

  it("reports an unreachable Worker as a tool error instead of hanging", async () => {
    const { callTool } = await setup("executor", { api_url: "http://127.0.0.1:9" });
    const result = await callTool("team_handoff", { packet: { packet_id: "p" } });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/could not be reached/);
  });

  it("reports a revoked or foreign token as 401 from the Worker", async () => {
    const { callTool } = await setup("executor", { member_token: "member_x.forged" });
    const result = await callTool("team_handoff", { packet: { packet_id: "p" } });
    expect(result).toMatchObject({ isError: true });
    expect(result.text).toContain("401 unauthorized");
  });
});

describe("memory and wiki", () => {
  it("searches the member's own employee's memory and wiki with the member token", async () => {
    const { api, identity, callTool } = await setup("planner");
    api.memory.emp_1 = [
      { id: "m1", text: "The client prefers short release notes" },
      { id: "m2", text: "Deploys happen on Tuesdays" },
    ];
    api.wiki.emp_1 = { "release-process": { title: "Release process", body: "Tag, build, publish release notes." } };
    const memory = await callTool("memory_search", { q: "release notes", limit: 5 });
    const wiki = await callTool("wiki_search", { q: "publish" });
    expect(JSON.parse(memory.text)).toEqual({ entries: [{ id: "m1", text: "The client prefers short release notes" }] });
    expect(JSON.parse(wiki.text).pages).toEqual([
      { slug: "release-process", title: "Release process", snippet: "Tag, build, publish release notes." },
    ]);
    const gets = api.requests.filter((r) => r.method === "GET");
    expect(gets.map((r) => r.path)).toEqual(["/v1/employees/emp_1/memory?q=release+notes&limit=5", "/v1/employees/emp_1/wiki?q=publish"]);
    expect(gets.every((r) => r.authorization === `Bearer ${identity.member_token}`)).toBe(true);
  });

  it("reads a wiki page by slug and reports a missing page as a tool error", async () => {
    const { api, callTool } = await setup("executor");
    api.wiki.emp_1 = { style: { title: "Style", body: "Use plain words." } };
    expect(JSON.parse((await callTool("wiki_read", { slug: "style" })).text)).toMatchObject({ slug: "style", body: "Use plain words." });
    const missing = await callTool("wiki_read", { slug: "nope" });
    expect(missing).toMatchObject({ isError: true });
    expect(missing.text).toContain("404 not_found");
  });

  it("refuses a slug that could change the path, before any request", async () => {
    const { api, callTool } = await setup("executor");
    const result = await callTool("wiki_read", { slug: "../../admin" });
    expect(result.isError).toBe(true);
    expect(api.requests).toHaveLength(0);
  });
});

describe("working state", () => {
  it("keeps one derived file per task that a later round can read", async () => {
    const { identity, callTool } = await setup("executor");
    expect((await callTool("working_state_read")).text).toBe("(no working state yet)");
    expect((await callTool("working_state_write", { content: "step 1 done" })).isError).toBe(false);
    expect(readFileSync(identity.working_state_path, "utf8")).toBe("step 1 done");
    expect(statSync(identity.working_state_path).mode & 0o777).toBe(0o600);
    expect((await callTool("working_state_read")).text).toBe("step 1 done");
  });
});

describe("the stdio server a member CLI starts", () => {
  it("serves the member named by its scaffold's identity file and calls the Worker with that member's token", async () => {
    const api = await startFakeTeamApi();
    teardown.push(() => api.close());
    const { dir: home, cleanup } = tempDir("crewplane-mcp-stdio-");
    teardown.push(cleanup);
    const token = api.mint({ employeeId: "emp_9", taskId: "task_7", round: 1, role: "planner" });
    const scaffold = await writeScaffold({
      home,
      taskId: "task_7",
      round: 1,
      role: "planner",
      runtime: "claude",
      model: "claude-sonnet-5-5",
      employee: { id: "emp_9" },
      member: { token, apiUrl: api.url },
    });
    const transport = new StdioClientTransport({
      command: scaffold.mcpServer.command,
      args: scaffold.mcpServer.args,
      env: { PATH: process.env.PATH ?? "", ...scaffold.mcpServer.env },
      stderr: "pipe",
    });
    const client = new Client({ name: "stdio-test", version: "0" });
    await client.connect(transport);
    teardown.push(() => client.close());
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["memory_search", "team_handoff", "wiki_search"]);
    const result = (await client.callTool({ name: "team_handoff", arguments: { packet: { packet_id: "s-1" } } })) as { isError?: boolean };
    expect(result.isError).not.toBe(true);
    expect(api.packets).toMatchObject([{ packet_id: "s-1", pin: { employeeId: "emp_9", taskId: "task_7", role: "planner" } }]);
    expect(scaffold.mcpServer.command).toBe(DEFAULT_MCP_LAUNCH.command);
  });

  it("exits 1 with a reason when its identity file is missing, so the CLI reports the server as failed", async () => {
    const { dir, cleanup } = tempDir("crewplane-mcp-missing-");
    teardown.push(cleanup);
    const { spawnSync } = await import("node:child_process");
    const out = spawnSync(DEFAULT_MCP_LAUNCH.command, [], {
      env: { PATH: process.env.PATH, [MEMBER_CONFIG_ENV]: join(dir, "member.json") },
      encoding: "utf8",
      input: "",
      timeout: 20_000,
    });
    expect(out.status).toBe(1);
    expect(out.stderr).toMatch(/crewplane-mcp: .*member\.json/);
    expect(existsSync(join(dir, "member.json"))).toBe(false);
  });
});
