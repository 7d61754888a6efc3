import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  checkMemberMcpConfig,
  memberAgentConfig,
  memberCliInput,
  removeScaffold,
  scaffoldDir,
  sweepScaffolds,
  writeScaffold,
} from "../../../local-runner/src/members/scaffold.ts";
import type { MemberRuntime, ScaffoldSpec } from "../../../local-runner/src/members/scaffold.ts";
import { CACHE_BOUNDARY, roleContract } from "../../../local-runner/src/members/soul.ts";
import { tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const EMPLOYEE_CONFIG = {
  name: "Aiko",
  runtime: { provider: "claude", fallback: ["codex"] },
  fallback_runtimes: ["grok"],
  model: { preferred: "claude-opus-5-5", effort: "max", utility: "claude-haiku-4-5" },
  capabilities: { allowed_tools: ["Read", "Write"] },
  budget: { monthly_usd: 50 },
};

function spec(overrides: Partial<ScaffoldSpec> = {}): ScaffoldSpec {
  const { dir: home, cleanup } = tempDir("crewplane-scaffold-");
  cleanups.push(cleanup);
  return {
    home,
    taskId: "task_1",
    round: 3,
    role: "executor",
    runtime: "codex",
    model: "gpt-5.5",
    effort: "medium",
    employee: {
      id: "emp_1",
      config: EMPLOYEE_CONFIG,
      identity: "I am Aiko, the release manager.",
      capabilities: { allowed_tools: ["Read", "Write"] },
    },
    member: { token: "member_abc.secret123", apiUrl: "http://127.0.0.1:8787" },
    ...overrides,
  };
}

describe("writeScaffold", () => {
  it("writes the member's files under <home>/agents/.ephemeral/<task>-<round>-<role>/", async () => {
    const s = spec();
    const scaffold = await writeScaffold(s);
    expect(scaffold.dir).toBe(join(s.home, "agents/.ephemeral/task_1-3-executor"));
    expect(readdirSync(scaffold.dir).sort()).toEqual([".mcp.json", "SOUL.md", "agent.json", "member.json", "scaffold.json"]);
    expect(statSync(scaffold.dir).mode & 0o777).toBe(0o700);
    // Work happens in the employee workspace, which exists; never in the scaffold.
    expect(scaffold.workspaceDir).toBe(join(s.home, "agents/emp_1"));
    expect(existsSync(scaffold.workspaceDir)).toBe(true);
    expect(scaffold.cwd).toBe(scaffold.workspaceDir);
    expect(scaffold.canWriteAcrossRounds).toBe(true);
  });

  it("copies the employee's config with runtime, model, effort and team_member overridden and fallbacks dropped", async () => {
    const scaffold = await writeScaffold(spec());
    expect(JSON.parse(readFileSync(scaffold.agentConfigPath, "utf8"))).toEqual({
      name: "Aiko",
      runtime: { provider: "codex" },
      model: { preferred: "gpt-5.5", effort: "medium", utility: "claude-haiku-4-5" },
      capabilities: { allowed_tools: ["Read", "Write"] },
      budget: { monthly_usd: 50 },
      team_member: { role: "executor", task_id: "task_1", round: 3, parent: "emp_1" },
    });
    expect(EMPLOYEE_CONFIG.model.effort).toBe("max"); // the original is untouched
  });

  it("writes no effort key at all when the role has none, even if the employee has one", () => {
    const config = memberAgentConfig({ ...spec(), effort: undefined });
    expect(config.model).toEqual({ preferred: "gpt-5.5", utility: "claude-haiku-4-5" });
    expect("effort" in (config.model as object)).toBe(false);
  });

  it("overrides a plain-string runtime too", () => {
    const config = memberAgentConfig({ ...spec(), employee: { id: "emp_1", config: { runtime: "claude", model: { preferred: "x" } } } });
    expect(config.runtime).toBe("codex");
  });

  it("starts SOUL.md with the role contract, then the cache boundary, then the identity", async () => {
    const scaffold = await writeScaffold(spec());
    const soul = readFileSync(scaffold.soulPath, "utf8");
    expect(soul.startsWith(roleContract("executor"))).toBe(true);
    const boundary = soul.indexOf(CACHE_BOUNDARY);
    expect(boundary).toBeGreaterThan(roleContract("executor").length - 1);
    expect(soul.indexOf("I am Aiko")).toBeGreaterThan(boundary);
  });

  it("keeps the part before the cache boundary byte-identical when the identity changes", async () => {
    const a = await writeScaffold(spec());
    const b = await writeScaffold(spec({ employee: { id: "emp_2", identity: "I am Bo, a very different person." } }));
    const prefix = (soul: string): string => soul.slice(0, soul.indexOf(CACHE_BOUNDARY) + CACHE_BOUNDARY.length);
    expect(prefix(a.soul)).toBe(prefix(b.soul));
    expect(a.soul).not.toBe(b.soul);
  });

  it("writes the member identity 0600 and an MCP config naming only the crewplane server with it", async () => {
    const scaffold = await writeScaffold(spec());
    expect(statSync(scaffold.memberConfigPath).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(scaffold.memberConfigPath, "utf8"))).toEqual({
      api_url: "http://127.0.0.1:8787",
      member_token: "member_abc.secret123",
      employee_id: "emp_1",
      task_id: "task_1",
      round: 3,
      role: "executor",
      tools: ["team_handoff", "memory_search", "wiki_read"],
      working_state_path: join(scaffold.workspaceDir, "state/working_state/task_1.md"),
      calls_log_path: join(scaffold.dir, "calls.jsonl"),
    });
    const mcp = JSON.parse(readFileSync(scaffold.mcpConfigPath, "utf8"));
    expect(Object.keys(mcp.mcpServers)).toEqual(["crewplane"]);
    expect(mcp.mcpServers.crewplane.env).toEqual({ CREWPLANE_MEMBER_CONFIG: scaffold.memberConfigPath });
    // The token lives only in the 0600 identity file.
    expect(readFileSync(scaffold.mcpConfigPath, "utf8")).not.toContain("secret123");
  });

  it.each([
    ["antigravity", [".gemini/settings.json", ".agents/mcp_config.json"]],
    ["grok", [".grok/config.toml"]],
  ] as const)("writes the working-directory MCP files %s reads and keeps the scaffold as its cwd", async (runtime, files) => {
    const scaffold = await writeScaffold(spec({ runtime, model: runtime === "grok" ? "grok-4" : "gemini-3.7-flash" }));
    for (const file of files) expect(existsSync(join(scaffold.dir, file))).toBe(true);
    expect(scaffold.cwd).toBe(scaffold.dir);
    expect(scaffold.canWriteAcrossRounds).toBe(false);
  });

  it("writes grok's config.toml with quoted strings only", async () => {
    const scaffold = await writeScaffold(spec({ runtime: "grok", model: "grok-4" }));
    const toml = readFileSync(join(scaffold.dir, ".grok/config.toml"), "utf8");
    expect(toml).toBe(
      [
        "[mcp_servers.crewplane]",
        `command = ${JSON.stringify(scaffold.mcpServer.command)}`,
        "args = []",
        `env = { CREWPLANE_MEMBER_CONFIG = ${JSON.stringify(scaffold.memberConfigPath)} }`,
        "",
      ].join("\n"),
    );
  });

  it("marks the crewplane server trusted for gemini and limits it to the member's tools", async () => {
    const scaffold = await writeScaffold(spec({ runtime: "antigravity", model: "gemini-3.7-flash", role: "planner" }));
    const settings = JSON.parse(readFileSync(join(scaffold.dir, ".gemini/settings.json"), "utf8"));
    expect(settings.mcpServers.crewplane).toMatchObject({ trust: true, includeTools: ["team_handoff", "memory_search", "wiki_search"] });
  });

  it("replaces an older scaffold of the same member (a retried attempt) and leaves no staging dirs", async () => {
    const s = spec();
    const first = await writeScaffold(s);
    writeFileSync(join(first.dir, "leftover.txt"), "from attempt 1");
    const second = await writeScaffold({ ...s, member: { ...s.member, token: "member_new.token456" } });
    expect(existsSync(join(second.dir, "leftover.txt"))).toBe(false);
    expect(readFileSync(second.memberConfigPath, "utf8")).toContain("token456");
    expect(readdirSync(join(s.home, "agents/.ephemeral"))).toEqual(["task_1-3-executor"]);
  });

  it.each([["../evil"], ["a/b"], [".."], [""]])("refuses the id %j instead of writing outside .ephemeral", async (bad) => {
    await expect(writeScaffold(spec({ taskId: bad }))).rejects.toThrow(/invalid task id/);
    await expect(writeScaffold(spec({ employee: { id: bad } }))).rejects.toThrow(/invalid employee id/);
  });
});

describe("memberCliInput", () => {
  it("hands the adapter the scaffold's pieces", async () => {
    const scaffold = await writeScaffold(spec({ role: "verifier", runtime: "codex" }));
    const input = memberCliInput(scaffold, { prompt: "judge this", outputSchemaPath: "/tmp/schema.json" });
    expect(input).toMatchObject({
      prompt: "judge this",
      cwd: scaffold.workspaceDir,
      role: "verifier",
      model: "gpt-5.5",
      effort: "medium",
      memberDir: scaffold.dir,
      mcp: { configPath: scaffold.mcpConfigPath, server: scaffold.mcpServer },
      allowedTools: ["mcp__crewplane__team_handoff"],
      sandbox: "read-only",
      soulPath: scaffold.soulPath,
      outputSchemaPath: "/tmp/schema.json",
    });
    expect(input.roleInstructions).toBe(scaffold.soul);
  });
});

describe("checkMemberMcpConfig", () => {
  it.each(["claude", "codex", "antigravity", "grok"] as const)("accepts a complete %s scaffold", async (runtime: MemberRuntime) => {
    const scaffold = await writeScaffold(spec({ runtime }));
    expect(await checkMemberMcpConfig(scaffold)).toEqual({ ok: true });
  });

  it("refuses the stage with member_mcp_config_missing when .mcp.json is gone", async () => {
    const scaffold = await writeScaffold(spec({ runtime: "claude" }));
    rmSync(scaffold.mcpConfigPath);
    expect(await checkMemberMcpConfig(scaffold)).toMatchObject({
      ok: false,
      code: "member_mcp_config_missing",
      message: expect.stringContaining(".mcp.json is missing"),
    });
  });

  it("refuses a config that points at someone else's identity", async () => {
    const mine = await writeScaffold(spec({ runtime: "claude" }));
    const other = await writeScaffold({ ...spec({ runtime: "claude" }), home: mine.dir.split("/agents/")[0]!, role: "planner" });
    const config = JSON.parse(readFileSync(mine.mcpConfigPath, "utf8"));
    config.mcpServers.crewplane.env.CREWPLANE_MEMBER_CONFIG = other.memberConfigPath;
    writeFileSync(mine.mcpConfigPath, JSON.stringify(config));
    expect(await checkMemberMcpConfig(mine)).toMatchObject({
      ok: false,
      code: "member_mcp_config_missing",
      message: expect.stringContaining("own identity"),
    });
  });

  it("refuses a missing runtime MCP file and a missing identity file", async () => {
    const grok = await writeScaffold(spec({ runtime: "grok" }));
    rmSync(join(grok.dir, ".grok/config.toml"));
    expect(await checkMemberMcpConfig(grok)).toMatchObject({ ok: false, message: expect.stringContaining(".grok/config.toml") });
    const claude = await writeScaffold(spec({ runtime: "claude" }));
    rmSync(claude.memberConfigPath);
    expect(await checkMemberMcpConfig(claude)).toMatchObject({ ok: false, message: expect.stringContaining("member.json") });
  });
});

describe("removal and the maintenance sweep", () => {
  it("removes one scaffold and refuses to remove anything else", async () => {
    const s = spec();
    const scaffold = await writeScaffold(s);
    await expect(removeScaffold(s.home, scaffold.workspaceDir)).rejects.toThrow(/not a member scaffold/);
    await removeScaffold(s.home, scaffold.dir);
    expect(existsSync(scaffold.dir)).toBe(false);
    expect(existsSync(scaffold.workspaceDir)).toBe(true);
  });

  it("sweeps exactly the scaffolds whose round is over, plus staging leftovers", async () => {
    const s = spec();
    const over = await writeScaffold({ ...s, taskId: "task_dead", round: 1 });
    const live = await writeScaffold({ ...s, taskId: "task_live", round: 2 });
    const overNoManifest = await writeScaffold({ ...s, taskId: "task_dead", round: 1, role: "planner" });
    rmSync(join(overNoManifest.dir, "scaffold.json"));
    const leftover = `${scaffoldDir(s.home, { taskId: "task_x", round: 1, role: "verifier" })}.staging-abcd`;
    mkdirSync(leftover, { recursive: true });
    const past = new Date(Date.now() - 10 * 60_000);
    utimesSync(leftover, past, past); // a crashed write, long ago
    const asked: string[] = [];
    const report = await sweepScaffolds(s.home, (key) => {
      asked.push(`${key.taskId}/${key.round}/${key.role}`);
      return key.taskId === "task_dead";
    });
    expect(asked.sort()).toEqual(["task_dead/1/executor", "task_dead/1/planner", "task_live/2/executor"]);
    expect(report.kept).toEqual([live.dir]);
    expect(report.removed.sort()).toEqual(
      [over.dir, overNoManifest.dir, `${scaffoldDir(s.home, { taskId: "task_x", round: 1, role: "verifier" })}.staging-abcd`].sort(),
    );
    expect(existsSync(live.dir)).toBe(true);
  });

  it("keeps a staging dir a stage is writing right now: a sweep never pulls a scaffold out from under its own write", async () => {
    const s = spec();
    const writing = `${scaffoldDir(s.home, { taskId: "task_now", round: 1, role: "executor" })}.staging-0a1b`;
    mkdirSync(join(writing, ".gemini"), { recursive: true });
    writeFileSync(join(writing, "agent.json"), "{}\n");
    const report = await sweepScaffolds(s.home, () => true);
    expect(report.removed).toEqual([]);
    expect(existsSync(join(writing, "agent.json"))).toBe(true);
  });

  it("gives each fanned-out executor stage its own scaffold, and the sweep reads the stage back from it", async () => {
    const s = spec();
    const a = await writeScaffold({ ...s, stageId: "stg_a", jobId: "job_a", member: { ...s.member, token: "member_a.secret" } });
    const b = await writeScaffold({ ...s, stageId: "stg_b", jobId: "job_b", member: { ...s.member, token: "member_b.secret" } });
    expect(a.dir).toBe(join(s.home, "agents/.ephemeral/task_1-3-executor-stg_a"));
    expect(JSON.parse(readFileSync(a.memberConfigPath, "utf8")).member_token).toBe("member_a.secret");
    expect(JSON.parse(readFileSync(b.memberConfigPath, "utf8")).member_token).toBe("member_b.secret");
    rmSync(join(b.dir, "scaffold.json")); // the directory name alone still names the stage
    const seen: string[] = [];
    await sweepScaffolds(s.home, (key, found) => {
      seen.push(`${key.stageId}:${found.manifest?.job_id ?? "-"}`);
      return false;
    });
    expect(seen.sort()).toEqual(["stg_a:job_a", "stg_b:-"]);
  });

  it("sweeps nothing when there is no .ephemeral directory yet", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    expect(await sweepScaffolds(dir, () => true)).toEqual({ removed: [], kept: [] });
  });
});
