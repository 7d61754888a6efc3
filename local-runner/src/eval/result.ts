/**
 * What a finished `eval_case` job reports. Pure. The Worker scores it with deterministic assertions
 * (no model judges), so nothing here interprets the run: the answer, the observed files as they are
 * on disk, and whatever nobody reported left absent (no usage → no `usage`, a model the stream did
 * not name → no `model`, as for an employee turn).
 */
import { providerOf, toolActivity } from "../members/stage-result.ts";
import type { StageResult } from "../members/stage-result.ts";
import { TURN_RESULT_BYTES, TURN_TEXT_LIMIT } from "../members/turn-result.ts";
import type { Usage } from "../protocol.ts";
import type { EffortMapping, NativeToolEvent } from "../runtimes/types.ts";
import type { ObservedFiles } from "./workspace.ts";

/** The whole result stays under this (the Worker refuses more than 512 KiB of JSON). */
export const EVAL_RESULT_BYTES = TURN_RESULT_BYTES;

export interface EvalCaseResult {
  text: string;
  runtime: string;
  model?: string;
  provider?: string;
  session_id?: string;
  duration_ms: number;
  usage?: Usage;
  cost_usd?: number;
  effort?: EffortMapping;
  /** The CLI's exit status; null for the offline runtime (nothing ran) and for a CLI that was killed. */
  exit_status: number | null;
  files: Record<string, string | null>;
  /** Present only when some content was cut (at 64 KiB on reading, or to keep the result in budget). */
  truncated_files?: string[];
  /** Present only when some observe path was not a regular file or led out of the dir. */
  unreadable_files?: string[];
  message_recovered_from_stream?: true;
  evidence: { native_tool_events: number };
  tool_activity: StageResult["tool_activity"];
}

export interface EvalObservation {
  runtime: string;
  /** The executable's command (`claude`); absent for the offline runtime, which no vendor serves. */
  cli?: string;
  stream: { text: string; model?: string; sessionId?: string; usage?: Usage; costUsd?: number; messageRecovered?: boolean };
  durationMs: number;
  exitStatus: number | null;
  effort?: EffortMapping;
  nativeEvents: readonly NativeToolEvent[];
  observed: ObservedFiles;
}

export function buildEvalResult(o: EvalObservation, budget = EVAL_RESULT_BYTES): EvalCaseResult {
  const usage = o.stream.usage && Object.keys(o.stream.usage).length > 0 ? o.stream.usage : undefined;
  const provider = o.cli ? providerOf(o.cli) : undefined;
  const result: EvalCaseResult = {
    text: cut(o.stream.text, TURN_TEXT_LIMIT),
    runtime: o.runtime,
    ...(o.stream.model ? { model: o.stream.model } : {}),
    ...(provider ? { provider } : {}),
    ...(o.stream.sessionId ? { session_id: o.stream.sessionId } : {}),
    duration_ms: o.durationMs,
    ...(usage ? { usage } : {}),
    ...(o.stream.costUsd !== undefined ? { cost_usd: o.stream.costUsd } : {}),
    ...(o.effort && o.effort.requested !== undefined ? { effort: o.effort } : {}),
    exit_status: o.exitStatus,
    files: o.observed.files,
    ...(o.observed.truncated.length > 0 ? { truncated_files: o.observed.truncated } : {}),
    ...(o.observed.unreadable.length > 0 ? { unreadable_files: o.observed.unreadable } : {}),
    ...(o.stream.messageRecovered ? { message_recovered_from_stream: true as const } : {}),
    evidence: { native_tool_events: o.nativeEvents.length },
    // The stream shows every tool call the CLI made, so no events is a measured "none".
    tool_activity: toolActivity(o.nativeEvents, []),
  };
  return withinEvalBudget(result, budget);
}

/**
 * File contents give way first, then the text. Contents are levelled: every file longer than a
 * common cap is cut to it (and named in `truncated_files`), the cap the largest that fits, so the
 * short files an assertion most often reads stay whole and every long one keeps its beginning.
 * Only if even empty contents do not fit is the text's end cut.
 */
export function withinEvalBudget(result: EvalCaseResult, budget: number): EvalCaseResult {
  if (bytes(result) <= budget) return result;
  const longest = Math.max(0, ...Object.values(result.files).map((c) => c?.length ?? 0));
  const capped = (cap: number): EvalCaseResult => {
    const entries = Object.entries(result.files);
    const cutPaths = new Set(result.truncated_files ?? []);
    const files = entries.map(([path, content]): [string, string | null] => {
      if (content === null || content.length <= cap) return [path, content];
      cutPaths.add(path);
      return [path, cut(content, cap, "")];
    });
    const truncated = entries.map(([path]) => path).filter((path) => cutPaths.has(path));
    return { ...result, files: Object.fromEntries(files), ...(truncated.length > 0 ? { truncated_files: truncated } : {}) };
  };
  let current = capped(0);
  if (bytes(current) <= budget) {
    // capped(lo) fits, capped(hi) does not (the uncut result is over budget).
    let lo = 0;
    let hi = longest;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (bytes(capped(mid)) <= budget) lo = mid;
      else hi = mid;
    }
    return capped(lo);
  }
  // Each pass cuts at least as many characters as bytes are over (a character is at least one byte of JSON).
  for (;;) {
    const over = bytes(current) - budget;
    if (over <= 0 || current.text.length === 0) return current;
    current = { ...current, text: cut(current.text, Math.max(0, current.text.length - over - 4)) };
  }
}

function bytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** At most `limit` characters, never half a surrogate pair; `mark` ends a cut text. */
function cut(text: string, limit: number, mark = "…"): string {
  if (text.length <= limit) return text;
  if (limit === 0) return "";
  let end = limit - mark.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, Math.max(0, end))}${mark}`;
}
