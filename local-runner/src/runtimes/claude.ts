/**
 * Claude Code (`claude -p --output-format stream-json --verbose`). Event shapes and failure
 * behaviour: /work/shared/reference/model-clis.md §1. The exit code is not trusted: the real CLI
 * reports "not logged in" as `subtype:"success", is_error:true`. stream-json without --verbose exits
 * 1, so the two always travel together. The prompt goes on stdin (`-p` without a positional prompt).
 */
import { mapEffort } from "./effort.ts";
import { clip, isObject, str, textOf, usageOf } from "./json-lines.ts";
import { jsonLinesParser, parseLines } from "./stream-parser.ts";
import type { Json } from "./json-lines.ts";
import { createToolLedger } from "./tool-ledger.ts";
import type { CliInput, CliInvocation, CliRuntimeAdapter, McpServerLaunch, StreamOutcome, StreamParser } from "./types.ts";

export function buildArgv(input: Omit<CliInput, "cwd" | "prompt"> & Partial<Pick<CliInput, "cwd" | "prompt">>): string[] {
  const args = ["-p", "--output-format", "stream-json", "--verbose"];
  if (input.model) args.push("--model", input.model);
  args.push(...mapEffort("claude", input.effort).args);
  if (input.maxTurns !== undefined) args.push("--max-turns", String(input.maxTurns));
  if (input.mcp) {
    // The member's own config, and nothing else: without --strict-mcp-config claude would also load
    // <cwd>/.mcp.json, i.e. the employee's server with the employee's identity (seed 002).
    args.push("--mcp-config", input.mcp.configPath, "--strict-mcp-config");
  } else if (input.noMcpServers) {
    // Strict with no config at all: no server loads (checked against the real 2.1.332: `mcp_servers: []`).
    args.push("--strict-mcp-config");
  }
  if (input.allowedTools) {
    const native = input.allowedTools.filter((t) => !t.startsWith("mcp__"));
    // --tools limits the built-in set (an empty value means none); --allowedTools pre-approves, since
    // nobody answers a permission prompt in -p mode.
    args.push("--tools", native.join(","));
    if (input.allowedTools.length > 0) args.push("--allowedTools", input.allowedTools.join(","));
  }
  if (input.deniedTools && input.deniedTools.length > 0) args.push("--disallowedTools", input.deniedTools.join(","));
  if (input.soulPath) args.push("--append-system-prompt-file", input.soulPath);
  return args;
}

export function buildInvocation(input: CliInput): CliInvocation {
  return { args: buildArgv(input), stdinText: input.prompt, files: [], cwd: input.cwd, effort: mapEffort("claude", input.effort).mapping };
}

export function createParser(): StreamParser {
  let sessionId: string | undefined;
  let model: string | undefined;
  let authFailed = false;
  // The synthetic assistant message of an API failure names its class (the Agent SDK's
  // "rate_limit" | "server_error" | "authentication_failed" | …).
  let apiError: string | undefined;
  let result: Json | undefined;
  let lastAssistantText: string | undefined;
  const mcpServers: Array<{ name: string; status: string }> = [];
  const tools = createToolLedger();

  const onContent = (content: unknown): void => {
    if (!Array.isArray(content)) return;
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block.type === "tool_use" && typeof block.name === "string") {
        tools.start(str(block.id), { tool: block.name, ...mcpName(block.name), input: block.input });
      } else if (block.type === "tool_result") {
        const output = textOf(block.content);
        tools.end(str(block.tool_use_id), block.is_error === true ? { status: "error", error: output } : { status: "ok", output });
      }
    }
  };

  return jsonLinesParser({
    done: () => result !== undefined,
    onEvent(event) {
      if (event.type === "system" && event.subtype === "init") {
        if (typeof event.session_id === "string") sessionId = event.session_id;
        if (typeof event.model === "string") model = event.model;
        if (Array.isArray(event.mcp_servers)) {
          for (const server of event.mcp_servers) {
            if (isObject(server) && typeof server.name === "string")
              mcpServers.push({ name: server.name, status: str(server.status) ?? "unknown" });
          }
        }
      } else if (event.type === "assistant") {
        if (event.error === "authentication_failed") authFailed = true;
        if (event.is_api_error_message === true && typeof event.error === "string") apiError = event.error;
        const message = isObject(event.message) ? event.message : undefined;
        onContent(message?.content);
        const text = assistantText(message?.content);
        if (text) lastAssistantText = text;
      } else if (event.type === "user") {
        onContent(isObject(event.message) ? event.message.content : undefined);
      } else if (event.type === "result") {
        result = event;
      }
      // Other types (stream_event, system hooks/api_retry/compact_boundary …) carry nothing we report.
    },
    finish() {
      if (typeof result?.session_id === "string") sessionId ??= result.session_id;
      const ids = { ...(model ? { model } : {}), ...(sessionId ? { sessionId } : {}) };
      if (!result) return { kind: "no_result", ...ids, ...(lastAssistantText ? { partialText: lastAssistantText } : {}) };
      const failed = mcpServers.filter((s) => s.status === "failed");
      const outcome = interpretResult(result, authFailed, apiError, lastAssistantText, ids);
      // A member whose MCP server did not start has no handoff channel: its "success" would be a
      // narration without packets (seed 002, live round 1). Auth and turn-limit errors still win.
      if (failed.length > 0 && (outcome.kind === "success" || outcome.code === "cli_error")) {
        return {
          kind: "error",
          code: "mcp_server_failed",
          message: `claude reported MCP server(s) ${failed.map((s) => `"${s.name}"`).join(", ")} as failed at startup`,
          ...ids,
        };
      }
      return outcome;
    },
    evidence() {
      return { nativeEvents: tools.events(), mcpServers: [...mcpServers], networkErrors: [] };
    },
  });
}

export function parseStream(lines: Iterable<string>): StreamOutcome {
  return parseLines(createParser, lines);
}

export const claudeRuntime: CliRuntimeAdapter = {
  name: "claude",
  command: "claude",
  worksInEmployeeWorkspace: true,
  buildArgv,
  buildInvocation,
  createParser,
};

function interpretResult(
  result: Json,
  authFailed: boolean,
  apiError: string | undefined,
  lastAssistantText: string | undefined,
  ids: { model?: string; sessionId?: string },
): Exclude<StreamOutcome, { kind: "no_result" }> {
  const text = typeof result.result === "string" ? result.result : "";
  if (result.is_error === false) {
    const usage = usageOf({
      input_tokens: isObject(result.usage) ? result.usage.input_tokens : undefined,
      output_tokens: isObject(result.usage) ? result.usage.output_tokens : undefined,
      cache_read_input_tokens: isObject(result.usage) ? result.usage.cache_read_input_tokens : undefined,
      cache_creation_input_tokens: isObject(result.usage) ? result.usage.cache_creation_input_tokens : undefined,
    });
    const cost = result.total_cost_usd;
    // With --json-schema or some hooks the result text can be empty; the answer is then the last
    // assistant message, which is recovered and flagged rather than reported as "".
    const recovered = text === "" && lastAssistantText !== undefined;
    return {
      kind: "success",
      text: recovered ? lastAssistantText : text,
      ...ids,
      ...(usage ? { usage } : {}),
      ...(typeof cost === "number" && Number.isFinite(cost) ? { costUsd: cost } : {}),
      ...(recovered ? { messageRecovered: true } : {}),
    };
  }

  const subtype = typeof result.subtype === "string" ? result.subtype : "unknown";
  const errors = Array.isArray(result.errors) ? result.errors.filter((e): e is string => typeof e === "string") : [];
  if (subtype === "error_max_turns") {
    const turns = typeof result.num_turns === "number" ? ` after ${result.num_turns} turns` : "";
    return { kind: "error", code: "max_turns", message: clip(errors.join("; ") || `claude stopped at its turn limit${turns}`), ...ids };
  }
  if (authFailed || text.startsWith("Not logged in")) {
    return {
      kind: "error",
      code: "not_logged_in",
      message: clip(`claude is not logged in on this runner host: ${text || "authentication_failed"}`),
      ...ids,
    };
  }
  const reason = typeof result.terminal_reason === "string" ? `, ${result.terminal_reason}` : "";
  const detail = text || errors.join("; ") || "no message";
  const status = typeof result.api_error_status === "number" ? result.api_error_status : undefined;
  // claude retries these itself (about ten times, with backoff: `system/api_retry` events) before it
  // gives up with terminal_reason "api_error"; the vendor being unavailable is worth a later attempt.
  if (result.terminal_reason === "api_error" && (transientStatus(status) || apiError === "rate_limit" || apiError === "server_error")) {
    const http = status !== undefined ? ` (HTTP ${status})` : "";
    return {
      kind: "error",
      code: "api_unavailable",
      message: clip(`claude's API was unavailable${http} after the CLI's own retries: ${detail}`),
      ...ids,
    };
  }
  return { kind: "error", code: "cli_error", message: clip(`claude reported an error (${subtype}${reason}): ${detail}`), ...ids };
}

/** Overloaded (529), rate limited (429), a request timeout (408) or any other 5xx. */
function transientStatus(status: number | undefined): boolean {
  return status !== undefined && (status === 408 || status === 429 || status >= 500);
}

function assistantText(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const parts = content
    .filter((b): b is Json => isObject(b) && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string);
  return parts.length > 0 ? parts.join("") : undefined;
}

/** `mcp__<server>__<tool>` → its parts (server names cannot contain `__`). */
function mcpName(name: string): { mcp?: { server: string; tool: string } } {
  const match = /^mcp__(.+?)__(.+)$/.exec(name);
  return match ? { mcp: { server: match[1]!, tool: match[2]! } } : {};
}

/** A stdio MCP server as every JSON config names it. */
export function stdioServer(server: McpServerLaunch): { command: string; args: string[]; env: Record<string, string> } {
  return { command: server.command, args: server.args, env: server.env };
}

/** claude's `--mcp-config` file (`.mcp.json`): the one server, by name. */
export function mcpJson(server: McpServerLaunch): string {
  return `${JSON.stringify({ mcpServers: { [server.name]: stdioServer(server) } }, null, 2)}\n`;
}
