/**
 * Claude Code (`claude -p --output-format stream-json --verbose`). Event shapes and failure
 * behaviour: /work/shared/reference/model-clis.md §1. The exit code is not trusted: the real CLI
 * reports "not logged in" as `subtype:"success", is_error:true`, sometimes with exit code 0.
 */
import type { Usage } from "../protocol.ts";
import type { CliRuntimeAdapter, PromptInput, StreamOutcome, StreamParser } from "./types.ts";

const MESSAGE_LIMIT = 2000;
const USAGE_FIELDS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"] as const;

export function buildArgv(input: PromptInput): string[] {
  // `--` keeps a prompt that starts with "-" from being parsed as a flag.
  return ["-p", "--output-format", "stream-json", "--verbose", ...(input.model ? ["--model", input.model] : []), "--", input.prompt];
}

type Json = Record<string, unknown>;

export function createParser(): StreamParser {
  let sessionId: string | undefined;
  let model: string | undefined;
  let authFailed = false;
  let result: Json | undefined;

  return {
    get done() {
      return result !== undefined;
    },
    push(line) {
      const event = parseJsonObject(line);
      if (!event) return;
      if (event.type === "system" && event.subtype === "init") {
        if (typeof event.session_id === "string") sessionId = event.session_id;
        if (typeof event.model === "string") model = event.model;
      } else if (event.type === "assistant") {
        if (event.error === "authentication_failed") authFailed = true;
      } else if (event.type === "result") {
        result = event;
      }
      // Other types (user, stream_event, system hooks/api_retry/compact_boundary …) carry nothing we report.
    },
    finish() {
      if (typeof result?.session_id === "string") sessionId ??= result.session_id;
      const ids = { ...(model ? { model } : {}), ...(sessionId ? { sessionId } : {}) };
      if (!result) return { kind: "no_result", ...ids };
      return interpretResult(result, authFailed, ids);
    },
  };
}

export function parseStream(lines: Iterable<string>): StreamOutcome {
  const parser = createParser();
  for (const line of lines) parser.push(line);
  return parser.finish();
}

export const claudeRuntime: CliRuntimeAdapter = { name: "claude", command: "claude", buildArgv, createParser };

function interpretResult(result: Json, authFailed: boolean, ids: { model?: string; sessionId?: string }): StreamOutcome {
  const text = typeof result.result === "string" ? result.result : "";
  if (result.is_error === false) {
    const usage = pickUsage(result.usage);
    const cost = result.total_cost_usd;
    return {
      kind: "success",
      text,
      ...ids,
      ...(usage ? { usage } : {}),
      ...(typeof cost === "number" && Number.isFinite(cost) ? { costUsd: cost } : {}),
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
  return { kind: "error", code: "cli_error", message: clip(`claude reported an error (${subtype}${reason}): ${detail}`), ...ids };
}

/** Only the counters the CLI actually reported; a missing field stays missing. */
function pickUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const usage: Usage = {};
  for (const field of USAGE_FIELDS) {
    const value = (raw as Json)[field];
    if (typeof value === "number" && Number.isFinite(value) && value >= 0) usage[field] = value;
  }
  return Object.keys(usage).length > 0 ? usage : undefined;
}

function parseJsonObject(line: string): Json | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
  } catch {
    return undefined;
  }
}

function clip(text: string): string {
  return text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT)}…` : text;
}
