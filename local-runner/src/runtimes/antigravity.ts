/**
 * The `antigravity` runtime: Google's Antigravity CLI `agy`, with the Gemini CLI `gemini` as the
 * supported stand-in (reference model-clis.md §3). Both run headless with `-p` and `stream-json`.
 * - The prompt goes on stdin; `-p ""` switches on headless mode and adds nothing (gemini appends the
 *   `-p` text to stdin).
 * - MCP servers come only from files in the working directory (`.gemini/settings.json`,
 *   `.agents/mcp_config.json`), so members keep their scaffold as cwd (seed 002): they cannot write
 *   files that outlive the round.
 * - gemini: `--skip-trust`, or an untrusted cwd silently downgrades the approval mode; no effort flag.
 * - agy: `--effort` (seed 002). NOT verified against a real `agy` binary (none is installable here):
 *   its flags and stream are assumed to follow gemini's.
 * Role instructions go in a `<role_system_prompt>` block, as for codex.
 */
import { withRoleBlock } from "./codex.ts";
import { mapEffort } from "./effort.ts";
import { clip, count, isObject, str, textOf, usageOf } from "./json-lines.ts";
import { jsonLinesParser, parseLines } from "./stream-parser.ts";
import type { Json } from "./json-lines.ts";
import { stdioServer } from "./claude.ts";
import { createToolLedger } from "./tool-ledger.ts";
import type {
  CliInput,
  CliInvocation,
  CliRuntimeAdapter,
  ExitClassification,
  McpServerLaunch,
  StreamOutcome,
  StreamParser,
} from "./types.ts";

export type AntigravityBinary = "agy" | "gemini";

export function buildArgv(input: CliInput, binary: AntigravityBinary = "gemini"): string[] {
  const args = ["-p", "", "--output-format", "stream-json"];
  if (input.model) args.push("--model", input.model);
  args.push(...mapEffort(binary, input.effort).args);
  if (binary === "gemini") {
    args.push("--skip-trust");
    // Headless: nobody answers a prompt. Read-only roles stay on `default` (tools that need approval
    // are refused); the crewplane server is marked trusted in its settings so its calls go through.
    args.push("--approval-mode", input.sandbox === "workspace-write" ? "yolo" : "default");
    if (input.mcp) args.push("--allowed-mcp-server-names", input.mcp.server.name);
  } else if (input.sandbox === "workspace-write") {
    args.push("--yolo");
  }
  return args;
}

export function buildInvocation(input: CliInput, binary: AntigravityBinary = "gemini"): CliInvocation {
  return {
    args: buildArgv(input, binary),
    stdinText: withRoleBlock(input.prompt, input.roleInstructions),
    files: [],
    cwd: input.cwd,
    effort: mapEffort(binary, input.effort).mapping,
  };
}

const NETWORK = /fetch failed|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|network/i;

export function createParser(): StreamParser {
  let sessionId: string | undefined;
  let model: string | undefined;
  let result: Json | undefined;
  let text = "";
  const warnings: string[] = [];
  const networkErrors: string[] = [];
  const tools = createToolLedger();

  return jsonLinesParser({
    done: () => result !== undefined,
    onEvent(event) {
      switch (event.type) {
        case "init":
          sessionId = str(event.session_id) ?? sessionId;
          model = str(event.model) ?? model;
          return;
        case "message":
          // Assistant text arrives as delta chunks; a non-delta message replaces what came before.
          if (event.role === "assistant" && typeof event.content === "string")
            text = event.delta === true ? text + event.content : event.content;
          return;
        case "tool_use": {
          const name = str(event.tool_name) ?? "unknown";
          tools.start(str(event.tool_id), { tool: name, ...mcpName(name), input: event.parameters });
          return;
        }
        case "tool_result": {
          const error = isObject(event.error) ? str(event.error.message) : undefined;
          const output = textOf(event.output);
          tools.end(
            str(event.tool_id),
            event.status === "success" ? { status: "ok", ...(output ? { output } : {}) } : { status: "error", ...(error ? { error } : {}) },
          );
          return;
        }
        case "error":
          if (typeof event.message === "string") {
            warnings.push(event.message);
            if (NETWORK.test(event.message)) networkErrors.push(event.message);
          }
          return;
        case "result":
          result = event;
          return;
        default:
      }
    },
    finish() {
      const ids = { ...(model ? { model } : {}), ...(sessionId ? { sessionId } : {}) };
      if (!result) return { kind: "no_result", ...ids, ...(text ? { partialText: text } : {}) };
      if (result.status === "success") {
        const usage = statsUsage(result.stats);
        return { kind: "success", text, ...ids, ...(usage ? { usage } : {}) };
      }
      const message = (isObject(result.error) ? str(result.error.message) : undefined) ?? warnings.at(-1) ?? "no message";
      if (isObject(result.error) && result.error.type === "FatalTurnLimitedError") {
        return { kind: "error", code: "max_turns", message: clip(`antigravity stopped at its turn limit: ${message}`), ...ids };
      }
      if (NETWORK.test(message))
        return { kind: "error", code: "network_error", message: clip(`antigravity could not reach its API: ${message}`), ...ids };
      return { kind: "error", code: "cli_error", message: clip(`antigravity reported an error: ${message}`), ...ids };
    },
    evidence() {
      return { nativeEvents: tools.events(), mcpServers: [], networkErrors: [...networkErrors] };
    },
  });
}

export function parseStream(lines: Iterable<string>): StreamOutcome {
  return parseLines(createParser, lines);
}

/** The Gemini CLI's FatalError exit codes (reference §3); auth failures print text only, no JSON. */
export function classifyExit(exitCode: number | null, stderrTail: readonly string[]): ExitClassification | undefined {
  const stderr = stderrTail.slice(-3).join(" | ");
  const detail = stderr ? `: ${stderr}` : "";
  switch (exitCode) {
    case 41:
      return { code: "not_logged_in", message: clip(`antigravity has no credentials on this runner host (exit 41)${detail}`) };
    case 53:
      return { code: "max_turns", message: clip(`antigravity stopped at its turn limit (exit 53)${detail}`) };
    case 42:
    case 44:
    case 52:
    case 54:
    case 55: {
      const meaning = { 42: "input", 44: "sandbox", 52: "config", 54: "tool execution", 55: "untrusted workspace" }[exitCode];
      return { code: "cli_error", message: clip(`antigravity failed with a ${meaning} error (exit ${exitCode})${detail}`) };
    }
    case 1:
      return stderr ? { code: "cli_error", message: clip(`antigravity exited with code 1${detail}`) } : undefined;
    default:
      return undefined;
  }
}

/** stats.input is the uncached part; `cached` the cache reads (reference §5). */
function statsUsage(stats: unknown): ReturnType<typeof usageOf> {
  if (!isObject(stats)) return undefined;
  const cached = count(stats.cached);
  const total = count(stats.input_tokens);
  const uncached = count(stats.input) ?? (total !== undefined && cached !== undefined ? Math.max(0, total - cached) : total);
  return usageOf({ input_tokens: uncached, cache_read_input_tokens: cached, output_tokens: stats.output_tokens });
}

/** `mcp_<server>_<tool>` (server names with `_` are ambiguous; the crewplane server has none). */
function mcpName(name: string): { mcp?: { server: string; tool: string } } {
  const match = /^mcp_([^_]+)_(.+)$/.exec(name);
  return match ? { mcp: { server: match[1]!, tool: match[2]! } } : {};
}

function adapter(binary: AntigravityBinary): CliRuntimeAdapter {
  return {
    name: "antigravity",
    command: binary,
    worksInEmployeeWorkspace: false,
    buildArgv: (input) => buildArgv(input, binary),
    buildInvocation: (input) => buildInvocation(input, binary),
    createParser,
    classifyExit,
  };
}

export const agyRuntime: CliRuntimeAdapter = adapter("agy");
export const geminiRuntime: CliRuntimeAdapter = adapter("gemini");

/** The working-directory MCP files agy and gemini read. */
export const ANTIGRAVITY_MCP_FILES = [".gemini/settings.json", ".agents/mcp_config.json"] as const;

export function antigravityMcpFiles(server: McpServerLaunch, includeTools: readonly string[]): Array<[string, string]> {
  const plain = stdioServer(server);
  return [
    // trust: the crewplane server's calls need no confirmation nobody could give; includeTools
    // keeps the CLI's view to the member's own tools.
    [".gemini/settings.json", `${JSON.stringify({ mcpServers: { [server.name]: { ...plain, trust: true, includeTools } } }, null, 2)}\n`],
    [".agents/mcp_config.json", `${JSON.stringify({ mcpServers: { [server.name]: plain } }, null, 2)}\n`],
  ];
}
