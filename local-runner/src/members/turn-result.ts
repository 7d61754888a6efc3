/**
 * What a finished `employee_turn` reports. Pure, like stage-result.ts, whose pieces it reuses (the
 * provider table, tool activity): unknown stays absent — no usage → no `usage`, a model the stream
 * did not name → no `model` (the one asked for is not proof of who answered).
 */
import type { McpCallRecord } from "../mcp/server.ts";
import type { SoulGuardReport } from "./soul-guard.ts";
import type { Usage } from "../protocol.ts";
import { maskSecrets } from "../runtimes/evidence.ts";
import type { EffortMapping, NativeToolEvent } from "../runtimes/types.ts";
import { providerOf, toolActivity } from "./stage-result.ts";
import type { StageResult } from "./stage-result.ts";
import type { WorkspaceEvidence } from "./workspace-scan.ts";

/** The Worker's limit on a result's text. */
export const TURN_TEXT_LIMIT = 200_000;
/** The whole result stays under this (the Worker refuses more than 512 KiB of JSON). */
export const TURN_RESULT_BYTES = 480 * 1024;

export interface EmployeeTurnResult extends WorkspaceEvidence {
  text: string;
  runtime: string;
  model?: string;
  provider?: string;
  session_id?: string;
  duration_ms: number;
  usage?: Usage;
  cost_usd?: number;
  message_recovered_from_stream?: true;
  effort?: EffortMapping;
  evidence: { native_tool_events: number };
  tool_activity: StageResult["tool_activity"];
  /** What the soul guard found and did (issue 23): the Worker records drift as a critical event. */
  soul_guard?: SoulGuardReport;
}

export interface TurnObservation {
  runtime: string;
  /** The executable's command (`claude`); absent for the offline runtime, which no vendor serves. */
  cli?: string;
  stream: { text: string; model?: string; sessionId?: string; usage?: Usage; costUsd?: number; messageRecovered?: boolean };
  durationMs: number;
  effort?: EffortMapping;
  nativeEvents: readonly NativeToolEvent[];
  workspace: WorkspaceEvidence;
  /** The employee's crewplane server's own call log, when the run had one. */
  calls?: readonly McpCallRecord[];
  /** Masked in the text (the employee token): nothing the run says may carry it back to the Worker. */
  secrets?: readonly string[];
}

export function buildTurnResult(o: TurnObservation): EmployeeTurnResult {
  const usage = o.stream.usage && Object.keys(o.stream.usage).length > 0 ? o.stream.usage : undefined;
  const provider = o.cli ? providerOf(o.cli) : undefined;
  const result: EmployeeTurnResult = {
    text: clip(maskSecrets(o.stream.text, o.secrets ?? []), TURN_TEXT_LIMIT),
    runtime: o.runtime,
    ...(o.stream.model ? { model: o.stream.model } : {}),
    ...(provider ? { provider } : {}),
    ...(o.stream.sessionId ? { session_id: o.stream.sessionId } : {}),
    duration_ms: o.durationMs,
    ...(usage ? { usage } : {}),
    ...(o.stream.costUsd !== undefined ? { cost_usd: o.stream.costUsd } : {}),
    ...(o.stream.messageRecovered ? { message_recovered_from_stream: true as const } : {}),
    ...(o.effort && o.effort.requested !== undefined ? { effort: o.effort } : {}),
    artifact_receipts: o.workspace.artifact_receipts,
    workspace: o.workspace.workspace,
    evidence: { native_tool_events: o.nativeEvents.length },
    // The CLI's stream shows every native tool call it made, so no events is a measured "none"; a
    // stream that showed none while the crewplane server served calls is corrected by its log.
    tool_activity: toolActivity(o.nativeEvents, o.calls ?? []),
  };
  return withinBytes(result, TURN_RESULT_BYTES);
}

/**
 * The text is the only part that can grow without bound in practice (receipts, changes and tool
 * names are capped), so a result over the budget loses the end of its text. Each pass cuts at least
 * as many characters as bytes are over — every character takes at least one byte of JSON — so this
 * ends within a few passes.
 */
export function withinBytes(result: EmployeeTurnResult, budget: number): EmployeeTurnResult {
  let current = result;
  for (;;) {
    const over = Buffer.byteLength(JSON.stringify(current)) - budget;
    if (over <= 0 || current.text.length === 0) return current;
    current = { ...current, text: clip(current.text, Math.max(0, current.text.length - over - 4)) };
  }
}

function clip(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return limit === 0 ? "" : `${text.slice(0, limit - 1)}…`;
}
