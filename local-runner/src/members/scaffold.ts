/**
 * Member scaffolds (seed 002 "役割が実際に動く場所"; issue 11 item 1): one ephemeral directory per
 * (task, round, role) under `<home>/agents/.ephemeral/<task>-<round>-<role>/`, holding
 * - `agent.json`: the employee's config copy with runtime, model, effort and `team_member`
 *   overridden; fallback runtimes dropped (a role never moves vendor); unset effort writes no key;
 * - `SOUL.md`: role contract, cache boundary, identity;
 * - `member.json` (0600): the member's identity for the crewplane MCP server (token, task, round, role);
 * - `.mcp.json` and the runtime's own working-directory MCP file, each naming only the crewplane
 *   server with this member's identity.
 * Work happens in the employee workspace `<home>/agents/<employee>/` for claude and codex (an eval
 * arm's round: its isolated workspace `<home>/eval-workspaces/<key>/` instead, ScaffoldSpec.workspaceDir);
 * the other runtimes read MCP from their cwd, so they keep the scaffold as cwd and cannot leave
 * files behind past the round.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ANTIGRAVITY_MCP_FILES, antigravityMcpFiles } from "../runtimes/antigravity.ts";
import { mcpJson } from "../runtimes/claude.ts";
import { GROK_MCP_FILES, grokMcpFiles } from "../runtimes/grok.ts";
import type { CliInput, Effort, McpServerLaunch, Role } from "../runtimes/types.ts";
import { renderSoul } from "./soul.ts";
import { soulDenyRules } from "./soul-guard.ts";
import { CREWPLANE_SERVER, toolsForRole } from "./tools.ts";
import type { EmployeeCapabilities, RoleTools } from "./tools.ts";

export const MEMBER_RUNTIMES = ["claude", "codex", "antigravity", "grok"] as const;
export type MemberRuntime = (typeof MEMBER_RUNTIMES)[number];

/** The env variable through which the MCP server finds its member's identity file. */
export const MEMBER_CONFIG_ENV = "CREWPLANE_MEMBER_CONFIG";

export const DEFAULT_MCP_LAUNCH: { command: string; args: string[] } = {
  command: fileURLToPath(new URL("../../bin/crewplane-mcp", import.meta.url)),
  args: [],
};

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const FALLBACK_KEYS = ["fallback", "fallbacks", "fallback_runtimes", "runtime_fallback"];

export interface ScaffoldSpec {
  home: string;
  taskId: string;
  round: number;
  role: Role;
  runtime: MemberRuntime;
  model: string;
  effort?: Effort | undefined;
  employee: {
    id: string;
    /** The employee's agent config as the Worker sent it; only the member's copy is changed. */
    config?: Record<string, unknown>;
    /** Identity text for SOUL.md. */
    identity?: string | undefined;
    capabilities?: EmployeeCapabilities | undefined;
  };
  member: { token: string; apiUrl: string; expiresAt?: string | undefined };
  /** How to start the crewplane MCP server; defaults to local-runner/bin/crewplane-mcp. */
  mcpLaunch?: { command: string; args: string[] };
  /**
   * The stage this member runs. With fan-out several executors of one round run at once, so a team
   * stage gets its own scaffold per stage (`<task>-<round>-<role>-<stage>`), never a shared one.
   */
  stageId?: string | undefined;
  /** Recorded in the manifest for the maintenance sweep ("is this round over?"). */
  roundId?: string | undefined;
  jobId?: string | undefined;
  /**
   * Where the member works instead of the employee workspace: an eval arm's isolated workspace
   * (issue 22, eval/isolated-workspace.ts), which the caller has made. Its working state lives there too.
   */
  workspaceDir?: string | undefined;
}

export interface ScaffoldKey {
  taskId: string;
  round: number;
  role: Role;
  stageId?: string | undefined;
}

/** What the maintenance sweep knows about a scaffold besides its key (from `scaffold.json`). */
export interface ScaffoldManifest {
  task_id: string;
  round: number;
  role: Role;
  runtime?: string;
  employee_id?: string;
  stage_id?: string;
  round_id?: string;
  job_id?: string;
  /** The member token's expiry: past it the round is over whatever the Worker says. */
  expires_at?: string;
  created_at?: string;
}

export interface Scaffold {
  dir: string;
  key: ScaffoldKey;
  runtime: MemberRuntime;
  model: string;
  effort?: Effort;
  workspaceDir: string;
  /** Where the member's CLI runs. */
  cwd: string;
  /** False for runtimes that keep the scaffold as cwd: their files vanish with the round. */
  canWriteAcrossRounds: boolean;
  agentConfigPath: string;
  soulPath: string;
  soul: string;
  memberConfigPath: string;
  mcpConfigPath: string;
  /** The crewplane MCP server appends one line per tool call here (the member's own audit trail). */
  callsLogPath: string;
  mcpServer: McpServerLaunch;
  tools: RoleTools;
}

/** The identity file the MCP server reads (identity only from here, never from tool arguments). */
export interface MemberConfig {
  api_url: string;
  member_token: string;
  employee_id: string;
  task_id: string;
  round: number;
  role: Role;
  tools: string[];
  working_state_path: string;
  expires_at?: string;
  /** Where the server records each call it served (tool, outcome, handed-off packet and artifacts). */
  calls_log_path?: string;
}

export function ephemeralRoot(home: string): string {
  return join(home, "agents", ".ephemeral");
}

export function employeeWorkspace(home: string, employeeId: string): string {
  assertId("employee id", employeeId);
  return join(home, "agents", employeeId);
}

export function scaffoldDir(home: string, key: ScaffoldKey): string {
  assertId("task id", key.taskId);
  if (!Number.isInteger(key.round) || key.round < 0 || key.round > 100_000) throw new Error(`invalid round: ${key.round}`);
  if (key.stageId !== undefined) assertId("stage id", key.stageId);
  return join(ephemeralRoot(home), `${key.taskId}-${key.round}-${key.role}${key.stageId !== undefined ? `-${key.stageId}` : ""}`);
}

/** Writes a fresh scaffold (an older one for the same key, from a retried attempt, is replaced). */
export async function writeScaffold(spec: ScaffoldSpec): Promise<Scaffold> {
  const key: ScaffoldKey = { taskId: spec.taskId, round: spec.round, role: spec.role, ...(spec.stageId ? { stageId: spec.stageId } : {}) };
  const dir = scaffoldDir(spec.home, key);
  const workspaceDir = spec.workspaceDir ?? employeeWorkspace(spec.home, spec.employee.id);
  const worksInWorkspace = spec.runtime === "claude" || spec.runtime === "codex";
  const tools = toolsForRole(spec.role, spec.employee.capabilities);
  const soul = renderSoul(spec.role, spec.employee.identity);
  const launch = spec.mcpLaunch ?? DEFAULT_MCP_LAUNCH;

  const paths = {
    agentConfigPath: join(dir, "agent.json"),
    soulPath: join(dir, "SOUL.md"),
    memberConfigPath: join(dir, "member.json"),
    mcpConfigPath: join(dir, ".mcp.json"),
    callsLogPath: join(dir, "calls.jsonl"),
  };
  const mcpServer: McpServerLaunch = {
    name: CREWPLANE_SERVER,
    command: launch.command,
    args: [...launch.args],
    env: { [MEMBER_CONFIG_ENV]: paths.memberConfigPath },
  };
  const memberConfig: MemberConfig = {
    api_url: spec.member.apiUrl,
    member_token: spec.member.token,
    employee_id: spec.employee.id,
    task_id: spec.taskId,
    round: spec.round,
    role: spec.role,
    tools: tools.crewplaneTools,
    // Derived, never accepted from a tool call: the working state lives with the employee, past the round.
    working_state_path: join(workspaceDir, "state", "working_state", `${spec.taskId}.md`),
    ...(spec.member.expiresAt ? { expires_at: spec.member.expiresAt } : {}),
    calls_log_path: paths.callsLogPath,
  };
  const manifest: ScaffoldManifest = {
    task_id: key.taskId,
    round: key.round,
    role: key.role,
    runtime: spec.runtime,
    employee_id: spec.employee.id,
    ...(spec.stageId ? { stage_id: spec.stageId } : {}),
    ...(spec.roundId ? { round_id: spec.roundId } : {}),
    ...(spec.jobId ? { job_id: spec.jobId } : {}),
    ...(spec.member.expiresAt ? { expires_at: spec.member.expiresAt } : {}),
    created_at: new Date().toISOString(),
  };

  const files: Array<[string, string, number?]> = [
    ["agent.json", `${JSON.stringify(memberAgentConfig(spec), null, 2)}\n`],
    // Read-only to the member (issue 23: a member never writes the employee's SOUL), and claude is denied edits of it.
    ["SOUL.md", soul, 0o444],
    ["member.json", `${JSON.stringify(memberConfig, null, 2)}\n`, 0o600],
    [".mcp.json", mcpJson(mcpServer)],
    ["scaffold.json", `${JSON.stringify(manifest, null, 2)}\n`],
    ...runtimeMcpFiles(spec.runtime, mcpServer, tools),
  ];

  await mkdir(workspaceDir, { recursive: true });
  await mkdir(ephemeralRoot(spec.home), { recursive: true });
  // Built aside and renamed into place: nobody ever sees a half-written scaffold.
  const staging = `${dir}.staging-${randomBytes(4).toString("hex")}`;
  try {
    await mkdir(staging, { mode: 0o700 });
    for (const [name, content, mode] of files) {
      const file = join(staging, name);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content, { mode: mode ?? 0o644 });
      if (mode !== undefined) await chmod(file, mode);
    }
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }

  return {
    dir,
    key,
    runtime: spec.runtime,
    model: spec.model,
    ...(spec.effort ? { effort: spec.effort } : {}),
    workspaceDir,
    cwd: worksInWorkspace ? workspaceDir : dir,
    canWriteAcrossRounds: worksInWorkspace,
    ...paths,
    soul,
    mcpServer,
    tools,
  };
}

/** The employee's config with the member's overrides (a pure function; exported for tests). */
export function memberAgentConfig(
  spec: Pick<ScaffoldSpec, "employee" | "runtime" | "model" | "effort" | "role" | "taskId" | "round">,
): Record<string, unknown> {
  const copy: Record<string, unknown> = structuredClone(spec.employee.config ?? {});
  for (const key of FALLBACK_KEYS) delete copy[key];
  const runtime = copy.runtime;
  if (runtime !== null && typeof runtime === "object" && !Array.isArray(runtime)) {
    const table: Record<string, unknown> = { ...(runtime as Record<string, unknown>), provider: spec.runtime };
    for (const key of FALLBACK_KEYS) delete table[key];
    copy.runtime = table;
  } else {
    copy.runtime = spec.runtime;
  }
  const model =
    copy.model !== null && typeof copy.model === "object" && !Array.isArray(copy.model)
      ? { ...(copy.model as Record<string, unknown>) }
      : {};
  model.preferred = spec.model;
  // Unset effort writes no key: the employee's effort belongs to the employee's runtime, and with
  // no key the spawn passes no flag and the vendor's default applies.
  delete model.effort;
  if (spec.effort) model.effort = spec.effort;
  copy.model = model;
  copy.team_member = { role: spec.role, task_id: spec.taskId, round: spec.round, parent: spec.employee.id };
  return copy;
}

/** What the adapter needs to run this member (the wiring a team stage does). */
export function memberCliInput(
  scaffold: Scaffold,
  call: { prompt: string; outputSchemaPath?: string; maxTurns?: number; codexMcpApprovalMode?: string },
): CliInput {
  return {
    prompt: call.prompt,
    cwd: scaffold.cwd,
    role: scaffold.key.role,
    model: scaffold.model,
    ...(scaffold.effort ? { effort: scaffold.effort } : {}),
    memberDir: scaffold.dir,
    mcp: { configPath: scaffold.mcpConfigPath, server: scaffold.mcpServer },
    allowedTools: scaffold.tools.tools,
    deniedTools: [...scaffold.tools.deniedTools, ...soulDenyRules(scaffold.soulPath)],
    sandbox: scaffold.tools.sandbox,
    soulPath: scaffold.soulPath,
    roleInstructions: scaffold.soul,
    ...(call.outputSchemaPath ? { outputSchemaPath: call.outputSchemaPath } : {}),
    ...(call.maxTurns !== undefined ? { maxTurns: call.maxTurns } : {}),
    ...(call.codexMcpApprovalMode ? { codexMcpApprovalMode: call.codexMcpApprovalMode } : {}),
  };
}

export type McpConfigCheck = { ok: true } | { ok: false; code: "member_mcp_config_missing"; message: string };

/**
 * Before a spawn: the member must have its own MCP config naming the crewplane server with its own
 * identity file. Otherwise the stage is refused rather than run under the parent's identity.
 */
export async function checkMemberMcpConfig(scaffold: Pick<Scaffold, "dir" | "runtime">): Promise<McpConfigCheck> {
  const missing = (why: string): McpConfigCheck => ({
    ok: false,
    code: "member_mcp_config_missing",
    message: `member scaffold ${scaffold.dir}: ${why}`,
  });
  const required = [".mcp.json", ...runtimeMcpFileNames(scaffold.runtime)];
  for (const name of required) if (!existsSync(join(scaffold.dir, name))) return missing(`${name} is missing`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(scaffold.dir, ".mcp.json"), "utf8"));
  } catch {
    return missing(".mcp.json is not valid JSON");
  }
  const server = (parsed as { mcpServers?: Record<string, { command?: unknown; env?: Record<string, unknown> }> })?.mcpServers?.[
    CREWPLANE_SERVER
  ];
  if (!server || typeof server.command !== "string") return missing(`.mcp.json does not name the ${CREWPLANE_SERVER} server`);
  const identity = server.env?.[MEMBER_CONFIG_ENV];
  if (typeof identity !== "string" || resolve(identity) !== join(scaffold.dir, "member.json")) {
    return missing(`.mcp.json does not point the ${CREWPLANE_SERVER} server at this member's own identity`);
  }
  if (!existsSync(identity)) return missing("member.json is missing");
  return { ok: true };
}

/** Removes one scaffold; refuses anything that is not a scaffold directory under `.ephemeral/`. */
export async function removeScaffold(home: string, dir: string): Promise<void> {
  const root = ephemeralRoot(home);
  if (dirname(resolve(dir)) !== resolve(root)) throw new Error(`not a member scaffold: ${dir}`);
  await rm(dir, { recursive: true, force: true });
}

export interface SweepReport {
  removed: string[];
  kept: string[];
}

/** One scaffold as the sweep finds it: its key, and its manifest when that is readable. */
export interface FoundScaffold {
  dir: string;
  manifest?: ScaffoldManifest;
}

/**
 * The maintenance pass: removes every scaffold whose round is over according to `isRoundOver`
 * (a round that died before its own cleanup), and staging leftovers of a crashed write.
 */
export async function sweepScaffolds(
  home: string,
  isRoundOver: (key: ScaffoldKey, found: FoundScaffold) => boolean | Promise<boolean>,
): Promise<SweepReport> {
  const root = ephemeralRoot(home);
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  const report: SweepReport = { removed: [], kept: [] };
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const dir = join(root, entry.name);
    const found = entry.name.includes(".staging-") ? "staging" : await readKey(dir, entry.name);
    // A staging dir is a leftover only once it is old: a fresh one is a stage writing its scaffold
    // right now, and removing it would fail that stage's write.
    const leftover = found === "staging" && (await isOldStaging(dir));
    if (
      leftover ||
      (found !== undefined &&
        found !== "staging" &&
        (await isRoundOver(found.key, { dir, ...(found.manifest ? { manifest: found.manifest } : {}) })))
    ) {
      await rm(dir, { recursive: true, force: true });
      report.removed.push(dir);
    } else {
      report.kept.push(dir);
    }
  }
  return report;
}

/** How long a staging dir may live before the sweep takes it for a crashed write's leftover. */
export const STAGING_GRACE_MS = 5 * 60_000;

async function isOldStaging(dir: string): Promise<boolean> {
  const info = await stat(dir).catch(() => undefined);
  return info !== undefined && Date.now() - info.mtimeMs > STAGING_GRACE_MS;
}

async function readKey(dir: string, name: string): Promise<{ key: ScaffoldKey; manifest?: ScaffoldManifest } | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(dir, "scaffold.json"), "utf8")) as Partial<ScaffoldManifest> & { role?: unknown };
    if (typeof manifest.task_id === "string" && typeof manifest.round === "number" && isRole(manifest.role)) {
      const stageId = typeof manifest.stage_id === "string" ? manifest.stage_id : undefined;
      return {
        key: { taskId: manifest.task_id, round: manifest.round, role: manifest.role, ...(stageId ? { stageId } : {}) },
        manifest: manifest as ScaffoldManifest,
      };
    }
  } catch {
    // No readable manifest: fall back to the directory name.
  }
  const match = /^(.+?)-(\d+)-(planner|executor|verifier|utility)(?:-([A-Za-z0-9][A-Za-z0-9._-]*))?$/.exec(name);
  return match
    ? { key: { taskId: match[1]!, round: Number(match[2]), role: match[3] as Role, ...(match[4] ? { stageId: match[4] } : {}) } }
    : undefined;
}

function isRole(value: unknown): value is Role {
  return value === "planner" || value === "executor" || value === "verifier" || value === "utility";
}

/**
 * The working-directory MCP files a member's runtime reads, besides `.mcp.json`: each format lives
 * with its runtime's adapter (antigravity: agy's and gemini's; grok: its TOML); claude and codex
 * take the server on their command line.
 */
function runtimeMcpFiles(runtime: MemberRuntime, server: McpServerLaunch, tools: RoleTools): Array<[string, string]> {
  if (runtime === "antigravity") return antigravityMcpFiles(server, tools.crewplaneTools);
  if (runtime === "grok") return grokMcpFiles(server);
  return [];
}

function runtimeMcpFileNames(runtime: MemberRuntime): string[] {
  if (runtime === "antigravity") return [...ANTIGRAVITY_MCP_FILES];
  if (runtime === "grok") return [...GROK_MCP_FILES];
  return [];
}

function assertId(what: string, value: string): void {
  if (!ID.test(value) || /^\.+$/.test(value)) throw new Error(`invalid ${what} for a member scaffold: ${JSON.stringify(value)}`);
}
