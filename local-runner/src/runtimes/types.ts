/**
 * What a runtime adapter looks like. Adapters are pure: they build argv (and the text for stdin)
 * and interpret output; running the process is `process-runner.ts`'s job, reporting the poll loop's.
 */
import type { FailureCode, Usage } from "../protocol.ts";

export const ROLES = ["planner", "executor", "verifier", "utility"] as const;
export type Role = (typeof ROLES)[number];

/** The one effort scale (seed 002 "effort"); each adapter maps it to its CLI's spelling. */
export const EFFORTS = ["low", "medium", "high", "xhigh", "max"] as const;
export type Effort = (typeof EFFORTS)[number];

/** Codex's coarse sandbox, derived from a member's tool list (members/tools.ts). */
export type SandboxMode = "read-only" | "workspace-write";

/** How to start the crewplane MCP server for one member (its identity travels in `env`). */
export interface McpServerLaunch {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * Everything an adapter needs to build one CLI call. Only `prompt` and `cwd` are required: a
 * utility job passes little more; a team member passes its scaffold's pieces.
 */
export interface CliInput {
  /** The dispatch prompt. Never put in argv: it goes on stdin or into a prompt file. */
  prompt: string;
  /** Where the CLI runs: the employee workspace (claude, codex) or the scaffold (the others). */
  cwd: string;
  /** Default `utility`. */
  role?: Role;
  model?: string;
  /** Unset means no effort flag at all: the vendor's own default applies. */
  effort?: Effort;
  /** The member scaffold directory; files an adapter needs (a prompt file) are written here. */
  memberDir?: string;
  /** The member's MCP server: claude reads `configPath`; codex gets `server` as `-c` overrides. */
  mcp?: { configPath: string; server: McpServerLaunch };
  /** Tools in claude's spelling (`Read`, `mcp__crewplane__team_handoff`), from members/tools.ts. */
  allowedTools?: readonly string[];
  deniedTools?: readonly string[];
  /** Default `read-only`. */
  sandbox?: SandboxMode;
  /** A JSON Schema file the final answer must match (verifier / judge calls). */
  outputSchemaPath?: string;
  /** The member's SOUL file (role contract, cache boundary, identity). */
  soulPath?: string;
  /** The same text, for CLIs that take role instructions only inside the prompt. */
  roleInstructions?: string;
  maxTurns?: number;
  /** Codex's per-server approval for the crewplane server only (`approve` today; the seed used `auto`). */
  codexMcpApprovalMode?: string;
  /**
   * No MCP server from anywhere (an eval case): claude gets `--strict-mcp-config` without a config, so
   * neither a `.mcp.json` in its cwd nor the user's servers load. Ignored when `mcp` is set.
   */
  noMcpServers?: boolean;
}

/** A file to write before spawning (a prompt file for CLIs that do not read stdin). */
export interface PreparedFile {
  path: string;
  content: string;
}

/** What to run: argv, the text for stdin (then closed) and files to write first. */
export interface CliInvocation {
  args: string[];
  stdinText?: string;
  files: PreparedFile[];
  cwd: string;
  /** What the adapter did with the requested effort: the CLI's own value, or why none was passed. */
  effort: EffortMapping;
}

export type EffortMapping =
  { requested?: undefined } | { requested: Effort; applied: string; note?: string } | { requested: Effort; applied: null; note: string };

export type StreamErrorCode = Extract<
  FailureCode,
  "not_logged_in" | "cli_error" | "max_turns" | "mcp_server_failed" | "network_error" | "api_unavailable"
>;

/** What a finished stream says, before the process's exit status is taken into account. */
export type StreamOutcome =
  | {
      kind: "success";
      text: string;
      model?: string;
      sessionId?: string;
      usage?: Usage;
      costUsd?: number;
      /** The text came from the event stream (message events), not the CLI's final event. */
      messageRecovered?: boolean;
    }
  | { kind: "error"; code: StreamErrorCode; message: string; model?: string; sessionId?: string }
  /** The stream ended without the CLI's final event. */
  | { kind: "no_result"; model?: string; sessionId?: string; partialText?: string };

/** One tool call the CLI made with its own (native) tools or through MCP, as the stream showed it. */
export interface NativeToolEvent {
  /** The name as the CLI reported it (`Write`, `mcp__crewplane__team_handoff`, `command_execution`). */
  tool: string;
  callId?: string;
  /** The MCP server and tool, when the event was an MCP call. */
  mcp?: { server: string; tool: string };
  status: "ok" | "error" | "declined" | "incomplete";
  input?: unknown;
  output?: string;
  error?: string;
}

/** What the stream showed besides the answer: tool activity, MCP server health, retries. */
export interface StreamEvidence {
  nativeEvents: NativeToolEvent[];
  mcpServers: Array<{ name: string; status: string }>;
  /** The CLI reported it cannot reach its API (codex's "Reconnecting…", gemini's "fetch failed"). */
  networkErrors: string[];
}

export interface StreamParser {
  push(line: string): void;
  /** True once the final event has been seen; later output cannot change success into failure. */
  readonly done: boolean;
  finish(): StreamOutcome;
  evidence(): StreamEvidence;
}

/** A failure read from the exit status alone, for CLIs that report some errors only that way. */
export interface ExitClassification {
  code: Extract<FailureCode, "not_logged_in" | "cli_error" | "max_turns">;
  message: string;
}

/** A runtime backed by a model CLI found on PATH. */
export interface CliRuntimeAdapter {
  /** The runtime this adapter serves (`antigravity` has two: `agy` and the `gemini` stand-in). */
  name: string;
  /** Executable name looked up on PATH. */
  command: string;
  /** Whether members of this runtime can work in the employee workspace (claude, codex) or keep the scaffold as cwd. */
  worksInEmployeeWorkspace: boolean;
  buildArgv(input: CliInput): string[];
  buildInvocation(input: CliInput): CliInvocation;
  createParser(): StreamParser;
  classifyExit?(exitCode: number | null, stderrTail: readonly string[]): ExitClassification | undefined;
}
