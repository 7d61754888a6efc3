/**
 * Tools per role (seed 002 "各役割が得るツール"; issue 11 item 2) and for the employee's own turn.
 * Pure. Names use claude's spelling: native tools as-is (`Read`, `Bash`), crewplane MCP tools as
 * `mcp__crewplane__<tool>`; adapters translate (codex gets a sandbox mode and the server's
 * enabled_tools, the MCP server exposes only the caller's crewplane tools whatever the CLI).
 */
import { DEFAULT_ALLOWED_TOOLS } from "../../../src/jobs/default-tools.ts";
import type { Role, SandboxMode } from "../runtimes/types.ts";

export const CREWPLANE_SERVER = "crewplane";

/** The crewplane tools a team member can be given (its role picks among them). */
export const MEMBER_TOOLS = [
  "team_handoff",
  "working_state_read",
  "working_state_write",
  "memory_search",
  "wiki_search",
  "wiki_read",
] as const;
export type MemberTool = (typeof MEMBER_TOOLS)[number];

/**
 * The crewplane tools of the employee's own turn (seed 003 §7; issue 21 item 5): its evolution
 * engine, behind a token the Worker scopes to this employee and job. Never a member's: a role
 * member must not switch its parent's evolution on or off.
 */
export const EMPLOYEE_TOOLS = ["evolution_status", "evolution_toggle"] as const;
export type EmployeeTool = (typeof EMPLOYEE_TOOLS)[number];

/** Every tool the crewplane MCP server can serve; which ones a caller gets depends on its identity. */
export const CREWPLANE_TOOLS = [...MEMBER_TOOLS, ...EMPLOYEE_TOOLS] as const;
export type CrewplaneTool = (typeof CREWPLANE_TOOLS)[number];

const PREFIX = `mcp__${CREWPLANE_SERVER}__`;
const WILDCARD = `${PREFIX}*`;

/** What an employee without an allow-list gets: the Worker's own list (one definition, both sides). */
export const DEFAULT_EMPLOYEE_TOOLS = DEFAULT_ALLOWED_TOOLS;

/** Native tools that change the workspace; any of them makes a codex member `workspace-write`. */
const WRITE_TOOLS = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]);

const ROLE_CREWPLANE_TOOLS: Record<Role, readonly MemberTool[]> = {
  planner: ["team_handoff", "wiki_search", "memory_search"],
  executor: ["team_handoff", "memory_search", "wiki_read"],
  verifier: ["team_handoff"],
  utility: ["team_handoff"],
};

export interface EmployeeCapabilities {
  allowed_tools?: readonly string[] | undefined;
  denied_tools?: readonly string[] | undefined;
}

export interface RoleTools<T extends CrewplaneTool = CrewplaneTool> {
  /** The whole list in claude's spelling, wildcards expanded, denied tools removed. */
  tools: string[];
  /** Built-in tools of the CLI (`Read`, `Bash`, …). */
  nativeTools: string[];
  /** The crewplane MCP tools, bare names (`team_handoff`); a member's or an employee's, never both. */
  crewplaneTools: T[];
  /** Other MCP tools the employee allows (`mcp__browser__open`); only claude can honour them. */
  otherMcpTools: string[];
  /** Tools named in the employee's deny list, passed on so a CLI refuses them too. */
  deniedTools: string[];
  sandbox: SandboxMode;
}

export function crewplaneToolName(tool: CrewplaneTool): string {
  return `${PREFIX}${tool}`;
}

/**
 * planner: team_handoff, wiki_search, memory_search (read-only); executor: the employee's effective
 * tools + team_handoff, memory_search, wiki_read; verifier/utility: team_handoff (read-only). A denied
 * tool is never granted, team_handoff included: the deny list is the employee's word.
 */
export function toolsForRole(role: Role, employee: EmployeeCapabilities = {}): RoleTools<MemberTool> {
  const requested: string[] =
    role === "executor"
      ? [...(employee.allowed_tools ?? DEFAULT_EMPLOYEE_TOOLS), ...ROLE_CREWPLANE_TOOLS.executor.map(crewplaneToolName)]
      : ROLE_CREWPLANE_TOOLS[role].map(crewplaneToolName);
  // Planner and verifier stay read-only whatever the employee may do: a verifier that can edit the
  // work it judges is not independent (seed 002).
  return resolveTools(requested, employee.denied_tools, role === "executor", MEMBER_TOOLS);
}

/**
 * The employee's own tools, for a run of the employee itself (an `employee_turn`, not a team
 * member): its allow-list or the default set, wildcards expanded, its deny list removed, and no
 * role's additions or narrowing. Codex gets `workspace-write` when a write tool remains, as an
 * executor would. The crewplane tools are the employee's (`evolution_status`, `evolution_toggle`),
 * never a member's: the wildcard of the default set expands to those two, and a member tool named
 * in the allow-list is dropped like any name the employee's server cannot serve.
 */
export function employeeTools(employee: EmployeeCapabilities = {}): RoleTools<EmployeeTool> {
  return resolveTools(employee.allowed_tools ?? DEFAULT_EMPLOYEE_TOOLS, employee.denied_tools, true, EMPLOYEE_TOOLS);
}

/** The same list without any crewplane tool, for a run that gets no crewplane server. */
export function withoutCrewplaneTools<T extends CrewplaneTool>(tools: RoleTools<T>): RoleTools<T> {
  return { ...tools, tools: tools.tools.filter((t) => !t.startsWith(PREFIX)), crewplaneTools: [] };
}

function resolveTools<T extends CrewplaneTool>(
  requested: readonly string[],
  deniedTools: readonly string[] | undefined,
  mayUseOwnTools: boolean,
  catalogue: readonly T[],
): RoleTools<T> {
  const denied = (deniedTools ?? []).map((t) => t.trim()).filter(Boolean);
  const isDenied = (tool: string): boolean => denied.some((d) => d === tool || (d.endsWith("*") && tool.startsWith(d.slice(0, -1))));

  const expanded = requested.flatMap((tool) => (tool.trim() === WILDCARD ? catalogue.map(crewplaneToolName) : [tool.trim()]));
  const tools = [...new Set(expanded.filter((t) => t.length > 0 && !isDenied(t)))];

  const crewplaneTools = catalogue.filter((t) => tools.includes(crewplaneToolName(t)));
  // Unknown crewplane names (a typo in an allow-list, or a tool this caller's server does not serve)
  // are dropped: the server could not serve them.
  const known = tools.filter((t) => !t.startsWith(PREFIX) || crewplaneTools.some((c) => crewplaneToolName(c) === t));
  const nativeTools = known.filter((t) => !t.startsWith("mcp__"));
  const otherMcpTools = known.filter((t) => t.startsWith("mcp__") && !t.startsWith(PREFIX));
  const mayWrite = mayUseOwnTools && nativeTools.some((t) => WRITE_TOOLS.has(toolBase(t)));
  return {
    tools: known,
    nativeTools: mayUseOwnTools ? nativeTools : [],
    crewplaneTools,
    otherMcpTools: mayUseOwnTools ? otherMcpTools : [],
    deniedTools: denied,
    sandbox: mayWrite ? "workspace-write" : "read-only",
  };
}

/** `Bash(git *)` → `Bash`. */
function toolBase(tool: string): string {
  const paren = tool.indexOf("(");
  return paren === -1 ? tool : tool.slice(0, paren);
}
