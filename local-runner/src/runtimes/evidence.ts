/**
 * A member's native tool events as evidence rows (seed 002 "ネイティブツールの作業も証拠になる";
 * issue 11 item 4). Pure.
 * - At most 200 events per member reach the trail; the rest are counted in ONE
 *   `native_tool_events_truncated` row, never dropped silently.
 * - Inputs are always kept (masked); outputs too, except for self-echo tools (`team_handoff`), whose
 *   output is mostly the caller's own words: the call is kept, the output withheld, so a role cannot
 *   ground its claims in its own packet.
 * - Failed or declined calls leave a trace with `error_class = "native_tool_error"`.
 */
import type { NativeToolEvent } from "./types.ts";

export const NATIVE_EVENT_CAP = 200;
export const SELF_ECHO_TOOLS: readonly string[] = ["team_handoff"];
export const TRUNCATED_ROW = "native_tool_events_truncated";

const OUTPUT_LIMIT = 4000;
const STRING_LIMIT = 2000;
const MASK = "[masked]";
const SECRET_KEY = /token|secret|password|passwd|api[_-]?key|authorization|credential|cookie/i;
const SECRET_PATTERNS = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bxai-[A-Za-z0-9_-]{16,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
];

interface RowBase {
  source: "native";
  evidence_source: "native_tool_event";
  runtime: string;
  model?: string;
}

export type EvidenceRow =
  | (RowBase & {
      tool: string;
      call_id?: string;
      mcp_server?: string;
      mcp_tool?: string;
      status: NativeToolEvent["status"];
      input?: unknown;
      output?: string;
      output_suppressed?: "self_echo";
      error?: string;
      error_class?: "native_tool_error";
    })
  | (RowBase & { tool: typeof TRUNCATED_ROW; count: number });

export interface EvidenceOptions {
  runtime: string;
  model?: string | undefined;
  /** Exact strings to mask wherever they appear (the member token, keys from the environment). */
  secrets?: readonly string[];
  cap?: number;
}

export function evidenceRows(events: readonly NativeToolEvent[], options: EvidenceOptions): EvidenceRow[] {
  const cap = options.cap ?? NATIVE_EVENT_CAP;
  const base: RowBase = {
    source: "native",
    evidence_source: "native_tool_event",
    runtime: options.runtime,
    ...(options.model ? { model: options.model } : {}),
  };
  const mask = masker(options.secrets ?? []);
  const rows: EvidenceRow[] = events.slice(0, cap).map((event) => {
    const selfEcho = isSelfEcho(event);
    const failed = event.status === "error" || event.status === "declined";
    return {
      ...base,
      tool: event.tool,
      ...(event.callId ? { call_id: event.callId } : {}),
      ...(event.mcp ? { mcp_server: event.mcp.server, mcp_tool: event.mcp.tool } : {}),
      status: event.status,
      ...(event.input !== undefined ? { input: maskValue(event.input, mask) } : {}),
      ...(selfEcho
        ? { output_suppressed: "self_echo" as const }
        : event.output !== undefined
          ? { output: clipText(mask(event.output), OUTPUT_LIMIT) }
          : {}),
      ...(event.error !== undefined ? { error: clipText(mask(event.error), OUTPUT_LIMIT) } : {}),
      ...(failed ? { error_class: "native_tool_error" as const } : {}),
    };
  });
  if (events.length > cap) rows.push({ ...base, tool: TRUNCATED_ROW, count: events.length - cap });
  return rows;
}

export function isSelfEcho(event: Pick<NativeToolEvent, "tool" | "mcp">): boolean {
  // Every runtime's MCP naming (`mcp__s__t`, `mcp_s_t`, `s__t`) ends in `_<tool>`.
  const name = event.mcp?.tool ?? event.tool;
  return SELF_ECHO_TOOLS.some((tool) => name === tool || name.endsWith(`_${tool}`));
}

/**
 * One text with exactly the given secrets masked, and nothing else: for a model's answer, where a
 * key-shaped string may well be the work itself (evidence rows mask those patterns too).
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of exactSecrets(secrets)) out = out.split(secret).join(MASK);
  return out;
}

function exactSecrets(secrets: readonly string[]): string[] {
  return secrets.filter((s) => s.length >= 6).sort((a, b) => b.length - a.length);
}

function masker(secrets: readonly string[]): (text: string) => string {
  return (text) => {
    let out = maskSecrets(text, secrets);
    for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, MASK);
    return out;
  };
}

/** Masks strings throughout a JSON value and blanks values under secret-looking keys. */
function maskValue(value: unknown, mask: (text: string) => string, depth = 0): unknown {
  if (typeof value === "string") return clipText(mask(value), STRING_LIMIT);
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => maskValue(v, mask, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      SECRET_KEY.test(k) && v !== null && v !== "" ? MASK : maskValue(v, mask, depth + 1),
    ]),
  );
}

function clipText(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}
