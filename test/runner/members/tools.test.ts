import { describe, expect, it } from "vitest";
import { DEFAULT_EMPLOYEE_TOOLS, employeeTools, toolsForRole, withoutCrewplaneTools } from "../../../local-runner/src/members/tools.ts";

describe("toolsForRole", () => {
  it("gives the planner team_handoff, wiki_search and memory_search, read-only", () => {
    expect(toolsForRole("planner")).toEqual({
      tools: ["mcp__crewplane__team_handoff", "mcp__crewplane__wiki_search", "mcp__crewplane__memory_search"],
      nativeTools: [],
      crewplaneTools: ["team_handoff", "memory_search", "wiki_search"],
      otherMcpTools: [],
      deniedTools: [],
      sandbox: "read-only",
    });
  });

  it.each(["verifier", "utility"] as const)("gives the %s team_handoff only, read-only, whatever the employee may do", (role) => {
    const tools = toolsForRole(role, { allowed_tools: ["Bash", "Write"] });
    expect(tools.tools).toEqual(["mcp__crewplane__team_handoff"]);
    expect(tools.nativeTools).toEqual([]);
    expect(tools.sandbox).toBe("read-only");
  });

  it("gives an executor without an allow-list the default set plus the crewplane tools, workspace-write", () => {
    const tools = toolsForRole("executor");
    expect(tools.nativeTools).toEqual(DEFAULT_EMPLOYEE_TOOLS.filter((t) => !t.startsWith("mcp__")));
    expect(tools.crewplaneTools).toEqual([
      "team_handoff",
      "working_state_read",
      "working_state_write",
      "memory_search",
      "wiki_search",
      "wiki_read",
    ]);
    expect(tools.sandbox).toBe("workspace-write");
  });

  it("keeps an executor within the employee's allow-list and adds team_handoff, memory_search and wiki_read", () => {
    const tools = toolsForRole("executor", { allowed_tools: ["Read", "Grep", "mcp__browser__open"] });
    expect(tools.tools).toEqual([
      "Read",
      "Grep",
      "mcp__browser__open",
      "mcp__crewplane__team_handoff",
      "mcp__crewplane__memory_search",
      "mcp__crewplane__wiki_read",
    ]);
    expect(tools.otherMcpTools).toEqual(["mcp__browser__open"]);
    // A read-only employee yields a read-only executor (codex: --sandbox read-only).
    expect(tools.sandbox).toBe("read-only");
  });

  it("derives workspace-write from any write tool, including a scoped Bash rule", () => {
    expect(toolsForRole("executor", { allowed_tools: ["Read", "Bash(git *)"] }).sandbox).toBe("workspace-write");
    expect(toolsForRole("executor", { allowed_tools: ["Edit"] }).sandbox).toBe("workspace-write");
  });

  it("never grants a denied tool, a wildcard denial or team_handoff included", () => {
    const tools = toolsForRole("executor", { denied_tools: ["Bash", "WebFetch", "mcp__crewplane__wiki_*"] });
    expect(tools.tools).not.toContain("Bash");
    expect(tools.tools).not.toContain("WebFetch");
    expect(tools.crewplaneTools).not.toContain("wiki_read");
    expect(tools.crewplaneTools).not.toContain("wiki_search");
    expect(tools.deniedTools).toEqual(["Bash", "WebFetch", "mcp__crewplane__wiki_*"]);
    expect(toolsForRole("planner", { denied_tools: ["mcp__crewplane__team_handoff"] }).crewplaneTools).toEqual([
      "memory_search",
      "wiki_search",
    ]);
  });

  it("drops crewplane tool names the server does not know", () => {
    expect(toolsForRole("executor", { allowed_tools: ["mcp__crewplane__delete_everything", "Read"] }).tools).toEqual([
      "Read",
      "mcp__crewplane__team_handoff",
      "mcp__crewplane__memory_search",
      "mcp__crewplane__wiki_read",
    ]);
  });
});

describe("employeeTools (the employee's own turn)", () => {
  it("gives an employee without an allow-list the default set, the crewplane wildcard as its own two tools, workspace-write", () => {
    const tools = employeeTools();
    expect(tools.nativeTools).toEqual(DEFAULT_EMPLOYEE_TOOLS.filter((t) => !t.startsWith("mcp__")));
    expect(tools.crewplaneTools).toEqual(["evolution_status", "evolution_toggle"]);
    expect(tools.tools.filter((t) => t.startsWith("mcp__crewplane__"))).toEqual([
      "mcp__crewplane__evolution_status",
      "mcp__crewplane__evolution_toggle",
    ]);
    expect(tools.sandbox).toBe("workspace-write");
  });

  it("never gives the employee's own turn a member's tool, nor a member the employee's", () => {
    expect(employeeTools({ allowed_tools: ["Read", "mcp__crewplane__team_handoff", "mcp__crewplane__evolution_status"] }).tools).toEqual([
      "Read",
      "mcp__crewplane__evolution_status",
    ]);
    for (const role of ["planner", "executor", "verifier", "utility"] as const) {
      const tools = toolsForRole(role, { allowed_tools: ["mcp__crewplane__*", "mcp__crewplane__evolution_toggle"] });
      expect(tools.tools.some((t) => t.includes("evolution"))).toBe(false);
    }
  });

  it("honours the employee's deny list for its own crewplane tools, and drops them all with withoutCrewplaneTools", () => {
    const tools = employeeTools({ denied_tools: ["mcp__crewplane__evolution_toggle"] });
    expect(tools.crewplaneTools).toEqual(["evolution_status"]);
    const none = withoutCrewplaneTools(tools);
    expect(none.crewplaneTools).toEqual([]);
    expect(none.tools.some((t) => t.startsWith("mcp__crewplane__"))).toBe(false);
    expect(none.nativeTools).toEqual(tools.nativeTools);
  });

  it("keeps exactly the employee's allow-list minus its deny list, with no role's tools added", () => {
    const tools = employeeTools({ allowed_tools: ["Read", "Grep", "Bash", "mcp__browser__open"], denied_tools: ["Bash"] });
    expect(tools.tools).toEqual(["Read", "Grep", "mcp__browser__open"]);
    expect(tools.otherMcpTools).toEqual(["mcp__browser__open"]);
    expect(tools.deniedTools).toEqual(["Bash"]);
    // No write tool left: codex runs read-only.
    expect(tools.sandbox).toBe("read-only");
  });
});
