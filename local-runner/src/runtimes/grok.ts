/**
 * xAI's Grok Build CLI (`grok`), headless (reference model-clis.md §4a). Not on npm, so never run
 * for real here: argv and events follow xAI's headless-mode documentation.
 * - Headless grok ignores piped stdin: the prompt goes into a file, `--prompt-file`.
 * - `--output-format streaming-json`; `end` is always the last event; `--reasoning-effort`.
 * - `--always-approve`, or gated tools end the run as "Cancelled"; the reach is bounded by
 *   `--sandbox read-only|workspace` and by the MCP server, which serves only the member's tools.
 * - MCP comes from `<cwd>/.grok/config.toml`, so members keep their scaffold as cwd.
 */
import { join } from "node:path";
import { withRoleBlock } from "./codex.ts";
import { mapEffort } from "./effort.ts";
import { clip, count, isObject, str, textOf, usageOf } from "./json-lines.ts";
import { jsonLinesParser, parseLines } from "./stream-parser.ts";
import type { Json } from "./json-lines.ts";
import { tomlArray, tomlInlineTable, tomlString } from "./toml.ts";
import { createToolLedger } from "./tool-ledger.ts";
import type { CliInput, CliInvocation, CliRuntimeAdapter, McpServerLaunch, StreamOutcome, StreamParser } from "./types.ts";

export const PROMPT_FILE = "prompt.md";

export function promptFilePath(input: Pick<CliInput, "memberDir" | "cwd">): string {
  return join(input.memberDir ?? input.cwd, PROMPT_FILE);
}

export function buildArgv(input: CliInput): string[] {
  const args = ["--prompt-file", promptFilePath(input), "--output-format", "streaming-json", "--cwd", input.cwd];
  if (input.model) args.push("-m", input.model);
  args.push(...mapEffort("grok", input.effort).args);
  if (input.maxTurns !== undefined) args.push("--max-turns", String(input.maxTurns));
  args.push("--always-approve", "--sandbox", input.sandbox === "workspace-write" ? "workspace" : "read-only", "--no-auto-update");
  return args;
}

export function buildInvocation(input: CliInput): CliInvocation {
  return {
    args: buildArgv(input),
    files: [{ path: promptFilePath(input), content: withRoleBlock(input.prompt, input.roleInstructions) }],
    cwd: input.cwd,
    effort: mapEffort("grok", input.effort).mapping,
  };
}

const NETWORK = /connection|network|timed out|dns|resolve/i;
const AUTH = /api key|unauthori[sz]ed|\b401\b|authentication|not logged in|XAI_API_KEY/i;

export function createParser(): StreamParser {
  let end: Json | undefined;
  let text = "";
  const errors: string[] = [];
  const networkErrors: string[] = [];
  const tools = createToolLedger();

  return jsonLinesParser({
    done: () => end !== undefined,
    onEvent(event) {
      switch (event.type) {
        case "text":
          if (typeof event.data === "string") text += event.data;
          return;
        case "tool_call": {
          const name = str(event.toolName) ?? str(event.title) ?? "unknown";
          tools.start(str(event.toolCallId), { tool: name, ...mcpName(name), input: event.rawInput });
          return;
        }
        case "tool_call_update": {
          if (event.status !== "completed" && event.status !== "failed") return;
          const output = textOf(event.rawOutput);
          tools.end(
            str(event.toolCallId),
            event.status === "completed"
              ? { status: "ok", ...(output ? { output } : {}) }
              : { status: "error", ...(output ? { error: output } : {}) },
          );
          return;
        }
        case "error":
          if (typeof event.message === "string") {
            errors.push(event.message);
            if (NETWORK.test(event.message)) networkErrors.push(event.message);
          }
          return;
        case "end":
          end = event;
          return;
        default:
        // thought, usage (per message; `end` has the total), unknown types.
      }
    },
    finish() {
      const ids = end && typeof end.sessionId === "string" ? { sessionId: end.sessionId } : {};
      if (!end) {
        // The CLI said why it stopped: report that rather than "truncated".
        const message = errors.at(-1);
        if (message !== undefined) {
          if (AUTH.test(message)) return { kind: "error", code: "not_logged_in", message: clip(`grok could not authenticate: ${message}`) };
          return {
            kind: "error",
            code: NETWORK.test(message) ? "network_error" : "cli_error",
            message: clip(`grok reported an error: ${message}`),
          };
        }
        return { kind: "no_result", ...(text ? { partialText: text } : {}) };
      }
      const stop = str(end.stopReason) ?? "unknown";
      if (stop === "max_turn_requests")
        return { kind: "error", code: "max_turns", message: "grok stopped at its turn limit (max_turn_requests)", ...ids };
      if (stop !== "end_turn")
        return {
          kind: "error",
          code: "cli_error",
          message: clip(`grok ended with stopReason "${stop}"${errors.length ? `: ${errors.at(-1)}` : ""}`),
          ...ids,
        };
      const raw = isObject(end.usage) ? end.usage : {};
      const usage = usageOf({
        input_tokens: raw.input_tokens,
        output_tokens: raw.output_tokens,
        cache_read_input_tokens: raw.cache_read_input_tokens,
        cache_creation_input_tokens: raw.cache_creation_input_tokens,
      });
      // A partial cost is not the cost: leave it out.
      const cost = end.cost_is_partial === true ? undefined : count(end.total_cost_usd);
      return { kind: "success", text, ...ids, ...(usage ? { usage } : {}), ...(cost !== undefined ? { costUsd: cost } : {}) };
    },
    evidence() {
      return { nativeEvents: tools.events(), mcpServers: [], networkErrors: [...networkErrors] };
    },
  });
}

export function parseStream(lines: Iterable<string>): StreamOutcome {
  return parseLines(createParser, lines);
}

/** `<server>__<tool>` is grok's MCP tool naming. */
function mcpName(name: string): { mcp?: { server: string; tool: string } } {
  const match = /^([^_]+(?:_[^_]+)*)__(.+)$/.exec(name);
  return match ? { mcp: { server: match[1]!, tool: match[2]! } } : {};
}

export const grokRuntime: CliRuntimeAdapter = {
  name: "grok",
  command: "grok",
  worksInEmployeeWorkspace: false,
  buildArgv,
  buildInvocation,
  createParser,
};

/** The working-directory MCP file grok reads. */
export const GROK_MCP_FILES = [".grok/config.toml"] as const;

export function grokMcpFiles(server: McpServerLaunch): Array<[string, string]> {
  const toml = [
    `[mcp_servers.${server.name}]`,
    `command = ${tomlString(server.command)}`,
    `args = ${tomlArray(server.args)}`,
    `env = ${tomlInlineTable(server.env)}`,
    "",
  ].join("\n");
  return [[".grok/config.toml", toml]];
}
