/**
 * The crewplane MCP server of the employee's own turn (seed 003 §7; issue 21 item 5): the
 * `employee_turn` payload may carry an `employee_token` the Worker scoped to this employee and this
 * job; with it, the run gets the employee's own tools (`evolution_status`, `evolution_toggle`).
 *
 * Both files live in the job's work dir (`<home>/work/<job>/`, 0700), never in the employee
 * workspace: the workspace scan must not report them as the employee's changes, and the identity
 * file holds a secret. The token is only ever in `employee-identity.json` (0600): argv carries the
 * paths, the CLI's env nothing, and the caller removes the files when the job ends.
 */
import { chmod, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { EmployeeIdentity } from "../mcp/server.ts";
import type { McpServerLaunch } from "../runtimes/types.ts";
import { DEFAULT_MCP_LAUNCH, MEMBER_CONFIG_ENV } from "./scaffold.ts";
import { CREWPLANE_SERVER } from "./tools.ts";
import type { EmployeeTool } from "./tools.ts";

/** What the Worker puts in place of the token when it rebuilds a job from its database row. */
export const REDACTED_TOKEN = "[redacted]";

/** An HTTP bearer token: printable, no whitespace, of a sane length. */
const TOKEN = /^[\x21-\x7e]{8,512}$/;

export const EMPLOYEE_IDENTITY_FILE = "employee-identity.json";
export const EMPLOYEE_MCP_CONFIG_FILE = "employee-mcp.json";
export const EMPLOYEE_CALLS_LOG_FILE = "employee-mcp-calls.jsonl";

/**
 * The token if a server can use it: absent, `[redacted]` (a job rebuilt from its row) or anything
 * that could not travel in an Authorization header means no server at all, as before issue 21.
 */
export function usableEmployeeToken(token: string | null | undefined): string | undefined {
  if (typeof token !== "string" || token === REDACTED_TOKEN || !TOKEN.test(token)) return undefined;
  return token;
}

export interface EmployeeMcpSpec {
  workDir: string;
  apiUrl: string;
  employeeId: string;
  token: string;
  expiresAt?: string | undefined;
  /** The employee's crewplane tools after its allow and deny lists; the server registers only these. */
  tools: readonly EmployeeTool[];
  /** How to start the crewplane MCP server; defaults to local-runner/bin/crewplane-mcp. */
  launch?: { command: string; args: string[] } | undefined;
}

export interface EmployeeMcp {
  identityPath: string;
  /** claude's `--mcp-config` file (no secret: it names the identity file, not the token). */
  configPath: string;
  callsLogPath: string;
  server: McpServerLaunch;
}

export async function writeEmployeeMcp(spec: EmployeeMcpSpec): Promise<EmployeeMcp> {
  const launch = spec.launch ?? DEFAULT_MCP_LAUNCH;
  const identityPath = join(spec.workDir, EMPLOYEE_IDENTITY_FILE);
  const configPath = join(spec.workDir, EMPLOYEE_MCP_CONFIG_FILE);
  const callsLogPath = join(spec.workDir, EMPLOYEE_CALLS_LOG_FILE);
  const identity: EmployeeIdentity = {
    kind: "employee",
    api_url: spec.apiUrl,
    employee_token: spec.token,
    employee_id: spec.employeeId,
    tools: [...spec.tools],
    ...(spec.expiresAt ? { expires_at: spec.expiresAt } : {}),
    calls_log_path: callsLogPath,
  };
  // The same variable members use: one launcher, and the file's `kind` tells the two apart.
  const server: McpServerLaunch = {
    name: CREWPLANE_SERVER,
    command: launch.command,
    args: [...launch.args],
    env: { [MEMBER_CONFIG_ENV]: identityPath },
  };
  try {
    await writeFile(identityPath, `${JSON.stringify(identity, null, 2)}\n`, { mode: 0o600 });
    // A later attempt of the same job re-opens its work dir; writeFile's mode applies only to a new file.
    await chmod(identityPath, 0o600);
    const config = { mcpServers: { [server.name]: { command: server.command, args: server.args, env: server.env } } };
    await writeFile(configPath, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  } catch (err) {
    await removeEmployeeMcp({ identityPath, configPath });
    throw err;
  }
  return { identityPath, configPath, callsLogPath, server };
}

/** Removes the identity and its MCP config (the call log stays with the work dir: it holds no secret). */
export async function removeEmployeeMcp(files: Pick<EmployeeMcp, "identityPath" | "configPath">): Promise<void> {
  await rm(files.identityPath, { force: true });
  await rm(files.configPath, { force: true });
}
