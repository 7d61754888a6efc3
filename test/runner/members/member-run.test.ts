/**
 * Team members run end to end through the real pieces: scaffold, adapter argv, the process runner,
 * a fake CLI that parses argv strictly and really starts the member's crewplane MCP server, and a
 * fake team API behind it.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { MemberRuntime } from "../../../local-runner/src/members/scaffold.ts";
import { startFakeTeamApi } from "../helpers/fake-team-api.ts";
import type { FakeTeamApi } from "../helpers/fake-team-api.ts";
import { runMember, workspaceFile } from "../helpers/members.ts";
import { fakeClis, tempDir } from "../helpers/paths.ts";
import { expectAllDead, readFakePids } from "../helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

async function setup(): Promise<{ home: string; api: FakeTeamApi }> {
  const api = await startFakeTeamApi();
  teardown.push(() => api.close());
  const { dir: home, cleanup } = tempDir("crewplane-member-");
  teardown.push(cleanup);
  return { home, api };
}

const WRITE = JSON.stringify({ "notes/a.md": "alpha\n", "notes/b.md": "beta\n" });
const PACKET = {
  packet_id: "exec-1",
  to_role: "verifier",
  findings: ["wrote notes/a.md and notes/b.md"],
  artifacts: [{ path: "notes/a.md" }, { path: "notes/b.md" }],
};

/** Each runtime flavour: the runtime and which binary serves it. */
const FLAVOURS: Array<[string, MemberRuntime, Partial<Record<string, string>>]> = [
  ["claude", "claude", { claude: fakeClis.claude }],
  ["codex", "codex", { codex: fakeClis.codex }],
  ["antigravity via gemini", "antigravity", { gemini: fakeClis.gemini }],
  ["antigravity via agy", "antigravity", { agy: fakeClis.agy }],
  ["grok", "grok", { grok: fakeClis.grok }],
];

describe.each(FLAVOURS)("an executor on %s", (label, runtime, executables) => {
  it("writes files, hands a packet off through its own MCP server with its own token, and leaves evidence", async () => {
    const { home, api } = await setup();
    const result = await runMember({
      home,
      api,
      runtime,
      role: "executor",
      executables,
      effort: "high",
      env: { FAKE_SCENARIO: "tool", FAKE_WRITE_FILES: WRITE, FAKE_HANDOFF: JSON.stringify(PACKET) },
      artifacts: PACKET.artifacts,
    });
    expect(result.refused).toBeUndefined();
    if (result.refused) return;
    expect(result.verdict, readFileSync(join(result.scaffold.dir, "stderr.log"), "utf8")).toMatchObject({ kind: "completed" });

    // The packet reached the Worker under this member's pin, and only this member's.
    expect(api.packets).toHaveLength(1);
    expect(api.packets[0]).toMatchObject({
      packet_id: "exec-1",
      leg: "executor-to-verifier",
      pin: { employeeId: "emp_1", taskId: "task_1", role: "executor" },
    });
    expect(api.requests.every((r) => r.authorization === `Bearer ${result.token}`)).toBe(true);

    // Evidence: the handoff call is kept without its (self-echo) output; file writes are there too.
    const handoff = result.evidence.find((r) => r.tool.endsWith("team_handoff"));
    expect(handoff).toMatchObject({ status: "ok", output_suppressed: "self_echo", input: { packet: { packet_id: "exec-1" } } });
    expect(result.evidence.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(result.evidence)).not.toContain(result.token);

    if (result.scaffold.canWriteAcrossRounds) {
      // claude and codex work in the employee workspace: the files outlive the round.
      expect(readFileSync(workspaceFile(result.scaffold, "notes/a.md"), "utf8")).toBe("alpha\n");
      expect(result.receipts?.receipts.map((r) => r.state)).toEqual(["exists", "exists"]);
    } else {
      // The others keep the scaffold as cwd (their MCP config lives there): the files land in the
      // scaffold, which the round's end removes, so the workspace receipts honestly say missing.
      expect(existsSync(join(result.scaffold.dir, "notes/a.md"))).toBe(true);
      expect(result.receipts?.receipts.map((r) => r.state)).toEqual(["missing", "missing"]);
    }
    expect(label).toBeTruthy();
  });
});

describe("role limits reach the CLI", () => {
  it("a claude planner cannot write files: the Write call is denied and recorded as a native tool error", async () => {
    const { home, api } = await setup();
    const result = await runMember({
      home,
      api,
      runtime: "claude",
      role: "planner",
      executables: { claude: fakeClis.claude },
      env: {
        FAKE_SCENARIO: "tool",
        FAKE_WRITE_FILES: WRITE,
        FAKE_HANDOFF: JSON.stringify([{ packet_id: "plan-1" }, { packet_id: "plan-2" }]),
      },
    });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "completed" });
    expect(existsSync(workspaceFile(result.scaffold, "notes/a.md"))).toBe(false);
    expect(result.evidence.find((r) => r.tool === "Write")).toMatchObject({ status: "error", error_class: "native_tool_error" });
    expect(api.packets.map((p) => [p.packet_id, p.slot])).toEqual([
      ["plan-1", ""],
      ["plan-2", ".01"],
    ]);
  });

  it("a codex verifier runs read-only: its file change is refused by the sandbox", async () => {
    const { home, api } = await setup();
    const result = await runMember({
      home,
      api,
      runtime: "codex",
      role: "verifier",
      executables: { codex: fakeClis.codex },
      env: { FAKE_SCENARIO: "tool", FAKE_WRITE_FILES: WRITE },
    });
    if (result.refused) throw new Error("refused");
    expect(existsSync(workspaceFile(result.scaffold, "notes/a.md"))).toBe(false);
    expect(result.evidence.find((r) => r.tool === "file_change")).toMatchObject({ status: "error", error_class: "native_tool_error" });
  });

  it("a codex verifier with an output schema answers with the JSON the schema asks for", async () => {
    const { home, api } = await setup();
    const schema = join(home, "verdict.schema.json");
    writeFileSync(schema, JSON.stringify({ type: "object" }));
    const result = await runMember({
      home,
      api,
      runtime: "codex",
      role: "verifier",
      executables: { codex: fakeClis.codex },
      outputSchemaPath: schema,
      env: { FAKE_CODEX_OUTPUT_JSON: '{"verdict":"FAIL","reasons":["notes/b.md missing"]}' },
    });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "completed", stream: { text: '{"verdict":"FAIL","reasons":["notes/b.md missing"]}' } });
  });

  it('reproduces codex declining MCP calls when the server\'s approval is "auto", and passes them with "approve"', async () => {
    const { home, api } = await setup();
    const env = { FAKE_SCENARIO: "tool", FAKE_HANDOFF: JSON.stringify({ packet_id: "x-1" }) };
    const declined = await runMember({
      home,
      api,
      runtime: "codex",
      role: "executor",
      executables: { codex: fakeClis.codex },
      env,
      codexMcpApprovalMode: "auto",
    });
    if (declined.refused) throw new Error("refused");
    expect(declined.evidence.find((r) => r.tool === "mcp__crewplane__team_handoff")).toMatchObject({
      status: "error",
      error: "user cancelled MCP tool call",
    });
    expect(api.packets).toHaveLength(0);
    await runMember({ home, api, runtime: "codex", role: "executor", round: 2, executables: { codex: fakeClis.codex }, env });
    expect(api.packets).toHaveLength(1);
  });
});

describe("refusals before and at spawn", () => {
  it("refuses a member without its MCP config with member_mcp_config_missing, and spawns nothing", async () => {
    const { home, api } = await setup();
    const log = join(home, "argv.jsonl");
    const result = await runMember({
      home,
      api,
      runtime: "claude",
      role: "executor",
      executables: { claude: fakeClis.claude },
      env: { FAKE_ARGV_LOG: log },
      tamper: (scaffold) => writeFileSync(scaffold.mcpConfigPath, "{}"),
    });
    expect(result.refused).toMatchObject({ ok: false, code: "member_mcp_config_missing" });
    expect(existsSync(log)).toBe(false);
  });

  it("fails the stage with mcp_server_failed when claude reports the member's server as failed", async () => {
    const { home, api } = await setup();
    const result = await runMember({
      home,
      api,
      runtime: "claude",
      role: "planner",
      executables: { claude: fakeClis.claude },
      // The identity file is there but not valid: the server exits 1 at startup.
      tamper: (scaffold) => writeFileSync(scaffold.memberConfigPath, '{"api_url":"not a url"}'),
    });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "failed", failure: { code: "mcp_server_failed", retryable: false } });
  });

  it("fails with spawn_failed naming runtime and model when the CLI cannot start (no failover to another vendor)", async () => {
    const { home, api } = await setup();
    const result = await runMember({ home, api, runtime: "codex", role: "executor", executables: { codex: join(home, "no-such-codex") } });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "failed", failure: { code: "spawn_failed" } });
    expect(result.verdict.kind === "failed" && result.verdict.failure.message).toMatch(/codex \(model gpt-5\.5\).*ENOENT/);
  });
});

/** scenario → expected verdict per runtime. */
const SCENARIOS: Array<[string, MemberRuntime, Partial<Record<string, string>>, Record<string, string>]> = [
  [
    "claude",
    "claude",
    { claude: fakeClis.claude },
    {
      fail: "not_logged_in",
      auth: "not_logged_in",
      maxturns: "max_turns",
      overloaded: "api_unavailable",
      garbage: "completed",
      truncated: "incomplete_output",
      crash: "incomplete_output",
    },
  ],
  [
    "codex",
    "codex",
    { codex: fakeClis.codex },
    {
      fail: "network_error",
      auth: "not_logged_in",
      maxturns: "cli_error",
      garbage: "completed",
      truncated: "incomplete_output",
      crash: "incomplete_output",
    },
  ],
  [
    "gemini",
    "antigravity",
    { gemini: fakeClis.gemini },
    {
      fail: "cli_error",
      auth: "not_logged_in",
      maxturns: "max_turns",
      garbage: "completed",
      truncated: "incomplete_output",
      crash: "incomplete_output",
    },
  ],
  [
    "grok",
    "grok",
    { grok: fakeClis.grok },
    {
      fail: "cli_error",
      auth: "not_logged_in",
      maxturns: "max_turns",
      garbage: "completed",
      truncated: "incomplete_output",
      crash: "incomplete_output",
    },
  ],
];

describe.each(SCENARIOS)("%s scenarios are classified from the stream first, then the exit", (_label, runtime, executables, expected) => {
  it.each(Object.entries(expected))("%s → %s", async (scenario, code) => {
    const { home, api } = await setup();
    const result = await runMember({ home, api, runtime, role: "verifier", executables, env: { FAKE_SCENARIO: scenario } });
    if (result.refused) throw new Error("refused");
    if (code === "completed") expect(result.verdict).toMatchObject({ kind: "completed" });
    else expect(result.verdict).toMatchObject({ kind: "failed", failure: { code } });
  });

  it("hang → killed at the timeout with its whole process group", async () => {
    const { home, api } = await setup();
    // Long enough for the fake to start (claude first starts its MCP server) on a loaded machine.
    const timeoutMs = runtime === "claude" ? 6000 : 2500;
    const result = await runMember({ home, api, runtime, role: "verifier", executables, env: { FAKE_SCENARIO: "hang" }, timeoutMs });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "failed", failure: { code: "timeout", retryable: true } });
    const pids = readFakePids(result.scaffold.cwd, result.entry.adapter.command);
    expect(pids).toBeDefined();
    await expectAllDead(pids!);
  });
});

describe("codex without network", () => {
  it("is classified as a network failure when the timeout ends its endless reconnecting", async () => {
    const { home, api } = await setup();
    const result = await runMember({
      home,
      api,
      runtime: "codex",
      role: "executor",
      executables: { codex: fakeClis.codex },
      env: { FAKE_SCENARIO: "offline" },
      timeoutMs: 1500,
    });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "failed", failure: { code: "network_error", retryable: true } });
    expect(result.verdict.kind === "failed" && result.verdict.failure.message).toMatch(
      /waiting for network.*killed at the 1500 ms timeout/,
    );
    await expectAllDead(readFakePids(result.scaffold.cwd, "codex")!);
  });
});

describe("prompt delivery", () => {
  it.each([
    ["claude", "claude", { claude: fakeClis.claude }],
    ["codex", "codex", { codex: fakeClis.codex }],
    ["gemini", "antigravity", { gemini: fakeClis.gemini }],
  ] as const)("%s gets the prompt on stdin, which is then closed", async (cli, runtime, executables) => {
    const { home, api } = await setup();
    const log = join(home, "argv.jsonl");
    const prompt = "Plan the release for task_1.";
    const result = await runMember({ home, api, runtime, role: "planner", executables, prompt, env: { FAKE_ARGV_LOG: log } });
    if (result.refused) throw new Error("refused");
    expect(result.verdict).toMatchObject({ kind: "completed" });
    const call = JSON.parse(readFileSync(log, "utf8").trim().split("\n")[0]!);
    expect(call.cli).toBe(cli);
    expect(call.argv.join(" ")).not.toContain(prompt);
    expect(call.prompt).toContain(prompt);
    expect(call.stdinBytes).toBeGreaterThanOrEqual(prompt.length);
    // Non-claude members get the role contract inside the prompt.
    if (cli !== "claude") expect(call.prompt).toContain("<role_system_prompt>");
  });
});
