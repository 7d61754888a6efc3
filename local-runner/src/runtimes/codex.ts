/**
 * OpenAI Codex (`codex exec --json`). Argv, events and pitfalls: reference model-clis.md §2 and seed
 * 002's live rounds 4–8:
 * - `--cd <dir> --skip-git-repo-check`: exec refuses a non-git cwd otherwise, before any JSONL.
 * - no `-a` on exec: approval goes through `-c approval_policy="never"`; the crewplane MCP server
 *   alone gets a per-server approval override (value configurable), or every MCP call is declined.
 * - every `-c` scalar is a quoted TOML string (the port bug).
 * - the prompt goes on stdin (`-` as the prompt) and stdin is then closed: an open stdin blocks codex.
 * - role instructions travel in a `<role_system_prompt>` block: exec has no system-prompt flag, and the
 *   workspace AGENTS.md is the employee's own file.
 * - with no network it retries forever; only the runner's timeout ends it.
 */
import { mapEffort } from "./effort.ts";
import { clip, count, isObject, str, textOf, usageOf } from "./json-lines.ts";
import { jsonLinesParser, parseLines } from "./stream-parser.ts";
import type { Json } from "./json-lines.ts";
import { createToolLedger } from "./tool-ledger.ts";
import { tomlArray, tomlKey, tomlString } from "./toml.ts";
import type { CliInput, CliInvocation, CliRuntimeAdapter, NativeToolEvent, StreamOutcome, StreamParser } from "./types.ts";

/** Current codex documents `approve`; the seed's 0.156 used `auto`. Configurable per call. */
export const DEFAULT_CODEX_MCP_APPROVAL = "approve";

export function buildArgv(input: CliInput): string[] {
  const args = ["exec", "--json", "--cd", input.cwd, "--skip-git-repo-check"];
  if (input.model) args.push("-m", input.model);
  args.push("-s", input.sandbox ?? "read-only");
  args.push("-c", `approval_policy=${tomlString("never")}`);
  args.push(...mapEffort("codex", input.effort).args);
  if (input.mcp) {
    const { server } = input.mcp;
    const key = `mcp_servers.${tomlKey(server.name)}`;
    args.push("-c", `${key}.command=${tomlString(server.command)}`);
    args.push("-c", `${key}.args=${tomlArray(server.args)}`);
    for (const [name, value] of Object.entries(server.env)) args.push("-c", `${key}.env.${tomlKey(name)}=${tomlString(value)}`);
    const tools = crewplaneTools(input.allowedTools, server.name);
    if (tools) args.push("-c", `${key}.enabled_tools=${tomlArray(tools)}`);
    args.push("-c", `${key}.default_tools_approval_mode=${tomlString(input.codexMcpApprovalMode ?? DEFAULT_CODEX_MCP_APPROVAL)}`);
  }
  if (input.outputSchemaPath) args.push("--output-schema", input.outputSchemaPath);
  args.push("-");
  return args;
}

export function buildInvocation(input: CliInput): CliInvocation {
  return {
    args: buildArgv(input),
    stdinText: withRoleBlock(input.prompt, input.roleInstructions),
    files: [],
    cwd: input.cwd,
    effort: mapEffort("codex", input.effort).mapping,
  };
}

/** Role instructions ahead of the dispatch prompt, fenced so the model can tell them apart. */
export function withRoleBlock(prompt: string, roleInstructions: string | undefined): string {
  if (!roleInstructions) return prompt;
  return `<role_system_prompt>\n${roleInstructions.trim()}\n</role_system_prompt>\n\n${prompt}`;
}

/** `mcp__crewplane__wiki_read` → `wiki_read`, for the server's enabled_tools. */
function crewplaneTools(allowed: readonly string[] | undefined, server: string): string[] | undefined {
  if (!allowed) return undefined;
  const prefix = `mcp__${server}__`;
  return allowed.filter((t) => t.startsWith(prefix)).map((t) => t.slice(prefix.length));
}

const NETWORK =
  /reconnecting|stream disconnected|error sending request|failed to lookup address|connection (failed|refused|reset)|network/i;
const AUTH = /\b401\b|unauthori[sz]ed|not logged in|invalid api key|missing api key|authentication|please (run )?log ?in/i;

export function createParser(): StreamParser {
  let threadId: string | undefined;
  let final: Json | undefined;
  let lastMessage: string | undefined;
  let usage: ReturnType<typeof usageOf>;
  const errors: string[] = [];
  const networkErrors: string[] = [];
  const tools = createToolLedger();

  const onItem = (phase: "started" | "updated" | "completed", item: Json): void => {
    const id = str(item.id);
    switch (item.type) {
      case "agent_message":
        if (phase === "completed" && typeof item.text === "string") lastMessage = item.text;
        return;
      case "error":
        // Non-fatal (a transport fallback, a warning); kept for the failure message.
        if (typeof item.message === "string") noteError(item.message);
        return;
      case "command_execution":
      case "file_change":
      case "mcp_tool_call":
      case "web_search": {
        const event = toolEvent(item);
        if (phase === "started") tools.start(id, event);
        else if (phase === "completed") tools.end(id, { ...event, status: statusOf(item) });
        return;
      }
      default:
      // reasoning, todo_list, plan, collab_tool_call: not tool activity on the workspace.
    }
  };

  const noteError = (message: string): void => {
    errors.push(message);
    if (NETWORK.test(message)) networkErrors.push(message);
  };

  return jsonLinesParser({
    done: () => final !== undefined,
    onEvent(event) {
      switch (event.type) {
        case "thread.started":
          threadId = str(event.thread_id) ?? threadId;
          return;
        case "item.started":
        case "item.updated":
        case "item.completed":
          if (isObject(event.item)) onItem(event.type.slice(5) as "started" | "updated" | "completed", event.item);
          return;
        case "turn.completed": {
          // Thread-cumulative totals: the last one is the run's total. Cached input is part of
          // input_tokens here; it is split out so input_tokens means uncached input, as elsewhere.
          const raw = isObject(event.usage) ? event.usage : {};
          const input = count(raw.input_tokens);
          const cached = count(raw.cached_input_tokens);
          usage = usageOf({
            input_tokens: input !== undefined && cached !== undefined ? Math.max(0, input - cached) : input,
            cache_read_input_tokens: cached,
            output_tokens: raw.output_tokens,
          });
          final = event;
          return;
        }
        case "turn.failed":
          final = event;
          return;
        case "error":
          if (typeof event.message === "string") noteError(event.message);
          return;
        default:
      }
    },
    finish() {
      const ids = threadId ? { sessionId: threadId } : {};
      if (!final) return { kind: "no_result", ...ids, ...(lastMessage ? { partialText: lastMessage } : {}) };
      if (final.type === "turn.completed") {
        // turn.completed carries no text: the answer is always the stream's last agent_message,
        // which is what `messageRecovered` says (utility: `message_recovered_from_stream`).
        return {
          kind: "success",
          text: lastMessage ?? "",
          ...ids,
          ...(usage ? { usage } : {}),
          ...(lastMessage !== undefined ? { messageRecovered: true } : {}),
        };
      }
      const message = (isObject(final.error) ? str(final.error.message) : undefined) ?? errors.at(-1) ?? "turn failed";
      const all = [...errors, message].join(" | ");
      if (AUTH.test(all))
        return { kind: "error", code: "not_logged_in", message: clip(`codex could not authenticate: ${message}`), ...ids };
      if (NETWORK.test(message))
        return { kind: "error", code: "network_error", message: clip(`codex could not reach its API: ${message}`), ...ids };
      return { kind: "error", code: "cli_error", message: clip(`codex turn failed: ${message}`), ...ids };
    },
    evidence() {
      return { nativeEvents: tools.events(), mcpServers: [], networkErrors: [...networkErrors] };
    },
  });
}

export function parseStream(lines: Iterable<string>): StreamOutcome {
  return parseLines(createParser, lines);
}

export const codexRuntime: CliRuntimeAdapter = {
  name: "codex",
  command: "codex",
  worksInEmployeeWorkspace: true,
  buildArgv,
  buildInvocation,
  createParser,
  classifyExit(exitCode, stderrTail) {
    // Config and git-check errors print plain text on stderr and no JSONL at all.
    if (exitCode === 1 || exitCode === 2) {
      const text = stderrTail.join(" | ");
      if (text) return { code: "cli_error", message: clip(`codex exited with code ${exitCode}: ${text}`) };
    }
    return undefined;
  },
};

function toolEvent(item: Json): Omit<NativeToolEvent, "status" | "callId"> {
  switch (item.type) {
    case "command_execution":
      return { tool: "command_execution", input: { command: item.command }, ...outputOf(textOf(item.aggregated_output)) };
    case "file_change":
      return { tool: "file_change", input: { changes: item.changes } };
    case "mcp_tool_call": {
      const server = str(item.server) ?? "unknown";
      const tool = str(item.tool) ?? "unknown";
      const result = isObject(item.result) ? item.result : undefined;
      const error = isObject(item.error) ? str(item.error.message) : undefined;
      return {
        tool: `mcp__${server}__${tool}`,
        mcp: { server, tool },
        input: item.arguments,
        ...outputOf(textOf(result?.content ?? result?.structured_content)),
        ...(error ? { error } : {}),
      };
    }
    default:
      return { tool: String(item.type), input: isObject(item) && "query" in item ? { query: item.query } : undefined };
  }
}

function outputOf(output: string | undefined): { output?: string } {
  return output === undefined || output === "" ? {} : { output };
}

function statusOf(item: Json): NativeToolEvent["status"] {
  if (item.status === "declined") return "declined";
  if (item.status === "failed") return "error";
  if (item.type === "command_execution" && typeof item.exit_code === "number" && item.exit_code !== 0) return "error";
  if (item.type === "mcp_tool_call" && isObject(item.error)) return "error";
  return item.status === "completed" ? "ok" : "incomplete";
}
