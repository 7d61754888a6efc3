/**
 * Every adapter's argv for every role and effort: recorded as snapshots (so a change is reviewed),
 * and held to the rules of reference model-clis.md and seed 002 explicitly.
 */
import { describe, expect, it } from "vitest";
import { toolsForRole } from "../../../local-runner/src/members/tools.ts";
import { agyRuntime, geminiRuntime } from "../../../local-runner/src/runtimes/antigravity.ts";
import { claudeRuntime } from "../../../local-runner/src/runtimes/claude.ts";
import { codexRuntime } from "../../../local-runner/src/runtimes/codex.ts";
import { grokRuntime } from "../../../local-runner/src/runtimes/grok.ts";
import type { CliInput, CliRuntimeAdapter, Effort, Role } from "../../../local-runner/src/runtimes/types.ts";
import { EFFORTS, ROLES } from "../../../local-runner/src/runtimes/types.ts";

const PROMPT = "SECRET-PROMPT: ship the release notes";
const MODELS: Record<string, string> = {
  claude: "claude-sonnet-5-5",
  codex: "gpt-5.5",
  agy: "gemini-3.7-flash",
  gemini: "gemini-2.5-flash",
  grok: "grok-4",
};
const ADAPTERS: CliRuntimeAdapter[] = [claudeRuntime, codexRuntime, agyRuntime, geminiRuntime, grokRuntime];

/** What a team stage passes for a member, with fixed paths (the adapters are pure). */
function memberInput(adapter: CliRuntimeAdapter, role: Role, effort: Effort | undefined): CliInput {
  const tools = toolsForRole(role);
  const scaffold = `/home/r/.crewplane/agents/.ephemeral/task_1-1-${role}`;
  return {
    prompt: PROMPT,
    cwd: adapter.worksInEmployeeWorkspace ? "/home/r/.crewplane/agents/emp_1" : scaffold,
    role,
    model: MODELS[adapter.command]!,
    ...(effort ? { effort } : {}),
    memberDir: scaffold,
    mcp: {
      configPath: `${scaffold}/.mcp.json`,
      server: {
        name: "crewplane",
        command: "/opt/crewplane/local-runner/bin/crewplane-mcp",
        args: [],
        env: { CREWPLANE_MEMBER_CONFIG: `${scaffold}/member.json` },
      },
    },
    allowedTools: tools.tools,
    deniedTools: role === "executor" ? ["WebFetch"] : [],
    sandbox: tools.sandbox,
    soulPath: `${scaffold}/SOUL.md`,
    roleInstructions: "# Role contract",
    ...(role === "verifier" ? { outputSchemaPath: `${scaffold}/verdict.schema.json` } : {}),
  };
}

const matrix = (adapter: CliRuntimeAdapter): Record<string, string[]> => {
  const out: Record<string, string[]> = {};
  for (const role of ROLES)
    for (const effort of [undefined, ...EFFORTS])
      out[`${role}/${effort ?? "unset"}`] = adapter.buildArgv(memberInput(adapter, role, effort));
  return out;
};

describe.each(ADAPTERS.map((a) => [a.command, a] as const))("%s argv", (_command, adapter) => {
  it("matches the recorded argv for every role and effort", () => {
    expect(matrix(adapter)).toMatchSnapshot();
  });

  it("never carries the prompt in argv", () => {
    for (const argv of Object.values(matrix(adapter))) expect(argv.join("\u0000")).not.toContain("SECRET-PROMPT");
    for (const role of ROLES) {
      const invocation = adapter.buildInvocation(memberInput(adapter, role, "high"));
      const delivered = invocation.stdinText ?? invocation.files.map((f) => f.content).join("");
      expect(delivered).toContain(PROMPT);
    }
  });

  it("passes no effort flag when effort is unset", () => {
    for (const role of ROLES) {
      const argv = adapter.buildArgv(memberInput(adapter, role, undefined)).join(" ");
      expect(argv).not.toMatch(/--effort|--reasoning-effort|model_reasoning_effort/);
    }
  });
});

describe("claude argv rules", () => {
  it("always pairs stream-json with --verbose and names only the member's MCP config, strictly", () => {
    for (const argv of Object.values(matrix(claudeRuntime))) {
      expect(argv.slice(0, 4)).toEqual(["-p", "--output-format", "stream-json", "--verbose"]);
      expect(argv[argv.indexOf("--mcp-config") + 1]).toMatch(/\.ephemeral\/task_1-1-\w+\/\.mcp\.json$/);
      expect(argv).toContain("--strict-mcp-config");
      expect(argv[argv.indexOf("--append-system-prompt-file") + 1]).toMatch(/SOUL\.md$/);
    }
  });

  it("maps each effort to --effort verbatim", () => {
    for (const effort of EFFORTS) {
      const argv = claudeRuntime.buildArgv(memberInput(claudeRuntime, "planner", effort));
      expect(argv[argv.indexOf("--effort") + 1]).toBe(effort);
    }
  });

  it("gives read-only roles no built-in tools and the executor its native tools", () => {
    const planner = claudeRuntime.buildArgv(memberInput(claudeRuntime, "planner", "low"));
    expect(planner[planner.indexOf("--tools") + 1]).toBe("");
    expect(planner[planner.indexOf("--allowedTools") + 1]).toBe(
      "mcp__crewplane__team_handoff,mcp__crewplane__wiki_search,mcp__crewplane__memory_search",
    );
    const executor = claudeRuntime.buildArgv(memberInput(claudeRuntime, "executor", "low"));
    expect(executor[executor.indexOf("--tools") + 1]).toContain("Write");
    expect(executor[executor.indexOf("--disallowedTools") + 1]).toBe("WebFetch");
  });
});

describe("codex argv rules", () => {
  const all = matrix(codexRuntime);

  it("runs exec --json in the employee workspace without the git check, prompt from stdin", () => {
    for (const argv of Object.values(all)) {
      expect(argv.slice(0, 5)).toEqual(["exec", "--json", "--cd", "/home/r/.crewplane/agents/emp_1", "--skip-git-repo-check"]);
      expect(argv.at(-1)).toBe("-");
    }
  });

  it('approves through -c approval_policy="never" and never uses -a or --full-auto', () => {
    for (const argv of Object.values(all)) {
      expect(argv).toContain('approval_policy="never"');
      expect(argv).not.toContain("-a");
      expect(argv).not.toContain("--ask-for-approval");
      expect(argv).not.toContain("--full-auto");
    }
  });

  it("writes every -c value as a quoted TOML string (or an array/table of them), never a bare scalar", () => {
    for (const argv of Object.values(all)) {
      const values = argv.flatMap((arg, i) => (argv[i - 1] === "-c" ? [arg.slice(arg.indexOf("=") + 1)] : []));
      expect(values.length).toBeGreaterThan(5);
      for (const value of values) expect(value).toMatch(/^("|\[|\{)/);
    }
  });

  it("overrides tool approval for the crewplane server only, with a configurable value", () => {
    const argv = codexRuntime.buildArgv(memberInput(codexRuntime, "executor", "high"));
    const approvals = argv.filter((a) => a.includes("default_tools_approval_mode"));
    expect(approvals).toEqual(['mcp_servers.crewplane.default_tools_approval_mode="approve"']);
    const seedStyle = codexRuntime.buildArgv({ ...memberInput(codexRuntime, "executor", "high"), codexMcpApprovalMode: "auto" });
    expect(seedStyle).toContain('mcp_servers.crewplane.default_tools_approval_mode="auto"');
  });

  it("carries the member identity in the server env and limits the server to the role's tools", () => {
    const argv = codexRuntime.buildArgv(memberInput(codexRuntime, "planner", "high"));
    expect(argv).toContain(
      'mcp_servers.crewplane.env.CREWPLANE_MEMBER_CONFIG="/home/r/.crewplane/agents/.ephemeral/task_1-1-planner/member.json"',
    );
    expect(argv).toContain('mcp_servers.crewplane.enabled_tools=["team_handoff", "wiki_search", "memory_search"]');
  });

  it("derives the sandbox from the role's tools and asks for --output-schema only for the verifier", () => {
    const sandbox = (role: Role): string | undefined => {
      const argv = codexRuntime.buildArgv(memberInput(codexRuntime, role, "low"));
      return argv[argv.indexOf("-s") + 1];
    };
    expect(ROLES.map(sandbox)).toEqual(["read-only", "workspace-write", "read-only", "read-only"]);
    for (const role of ROLES)
      expect(codexRuntime.buildArgv(memberInput(codexRuntime, role, "low")).includes("--output-schema")).toBe(role === "verifier");
  });

  it('maps effort to -c model_reasoning_effort, clamping "max" to codex\'s "xhigh" and saying so', () => {
    const invocation = codexRuntime.buildInvocation(memberInput(codexRuntime, "executor", "max"));
    expect(invocation.args).toContain('model_reasoning_effort="xhigh"');
    expect(invocation.effort).toEqual({
      requested: "max",
      applied: "xhigh",
      note: 'codex has no "max" effort; clamped to its highest, "xhigh"',
    });
  });
});

describe("antigravity and grok argv rules", () => {
  it("runs gemini with --skip-trust, its MCP server allowed by name, and reports that effort has no flag", () => {
    const invocation = geminiRuntime.buildInvocation(memberInput(geminiRuntime, "executor", "high"));
    expect(invocation.args).toContain("--skip-trust");
    expect(
      invocation.args.slice(
        invocation.args.indexOf("--allowed-mcp-server-names"),
        invocation.args.indexOf("--allowed-mcp-server-names") + 2,
      ),
    ).toEqual(["--allowed-mcp-server-names", "crewplane"]);
    expect(invocation.effort).toMatchObject({ requested: "high", applied: null });
    expect(invocation.cwd).toMatch(/\.ephemeral\/task_1-1-executor$/);
  });

  it("passes --effort to agy", () => {
    const argv = agyRuntime.buildArgv(memberInput(agyRuntime, "planner", "xhigh"));
    expect(argv[argv.indexOf("--effort") + 1]).toBe("xhigh");
  });

  it("runs grok with streaming-json, --reasoning-effort and a sandbox per role", () => {
    const argv = grokRuntime.buildArgv(memberInput(grokRuntime, "executor", "max"));
    expect(argv[argv.indexOf("--output-format") + 1]).toBe("streaming-json");
    expect(argv[argv.indexOf("--reasoning-effort") + 1]).toBe("max");
    expect(argv[argv.indexOf("--sandbox") + 1]).toBe("workspace");
    const verifier = grokRuntime.buildArgv(memberInput(grokRuntime, "verifier", "low"));
    expect(verifier[verifier.indexOf("--sandbox") + 1]).toBe("read-only");
  });
});
