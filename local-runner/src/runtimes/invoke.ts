/**
 * One CLI call, end to end: write the adapter's files, spawn with the prompt on stdin (then closed)
 * and a wall-clock timeout, parse the stream as it arrives, and classify the run. Shared by utility
 * jobs and (later) team stages, so both read CLIs the same way.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { JobFailure } from "../protocol.ts";
import { runProcess } from "../process-runner.ts";
import type { ProcessOutcome } from "../process-runner.ts";
import type { CliInput, CliInvocation, CliRuntimeAdapter, StreamEvidence, StreamOutcome } from "./types.ts";

export interface CliEntry {
  name: string;
  adapter: CliRuntimeAdapter;
  executable: string;
}

export interface CliRunOptions {
  /** Raw output goes here: `stream.jsonl` (stdout) and `stderr.log`. */
  logDir: string;
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  killGraceMs?: number;
}

/**
 * After its final event a CLI has nothing left to report. One that then stays up (claude -p does at
 * times: anthropics/claude-code#25629) is stopped after this grace, instead of holding the job and
 * its runner slot until the job's timeout.
 */
export const FINAL_EVENT_GRACE_MS = 5000;

export interface CliRun {
  invocation: CliInvocation;
  process: ProcessOutcome;
  stream: StreamOutcome;
  evidence: StreamEvidence;
}

export type CliVerdict =
  | { kind: "completed"; stream: Extract<StreamOutcome, { kind: "success" }> }
  | { kind: "failed"; failure: JobFailure }
  | { kind: "aborted" };

export async function runCli(entry: CliEntry, input: CliInput, options: CliRunOptions): Promise<CliRun> {
  const invocation = entry.adapter.buildInvocation(input);
  for (const file of invocation.files) {
    await mkdir(dirname(file.path), { recursive: true });
    await writeFile(file.path, file.content, { mode: 0o600 });
  }
  const parser = entry.adapter.createParser();
  const lingering = new AbortController();
  let graceTimer: NodeJS.Timeout | undefined;
  const onLine = (line: string): void => {
    parser.push(line);
    if (parser.done && graceTimer === undefined) graceTimer = setTimeout(() => lingering.abort(), FINAL_EVENT_GRACE_MS);
  };
  const signal = options.signal ? AbortSignal.any([options.signal, lingering.signal]) : lingering.signal;
  const outcome = await runProcess({
    command: entry.executable,
    args: invocation.args,
    cwd: invocation.cwd,
    ...(options.env ? { env: options.env } : {}),
    timeoutMs: options.timeoutMs,
    ...(options.killGraceMs !== undefined ? { killGraceMs: options.killGraceMs } : {}),
    stdoutPath: join(options.logDir, "stream.jsonl"),
    stderrPath: join(options.logDir, "stderr.log"),
    onStdoutLine: onLine,
    // Stopping a lingering CLI reads as "aborted", but its final event is in: classifyCliRun goes by that.
    signal,
    ...(invocation.stdinText !== undefined ? { stdinText: invocation.stdinText } : {}),
  }).finally(() => clearTimeout(graceTimer));
  return { invocation, process: outcome, stream: parser.finish(), evidence: parser.evidence() };
}

/**
 * The stream's final event decides whenever there is one — even if the process then lingered and
 * was killed — because it is the CLI's own verdict. Exit status only explains its absence. A role
 * never moves to another vendor: whatever fails here fails the call, naming runtime and model.
 */
export function classifyCliRun(
  entry: Pick<CliEntry, "name" | "executable" | "adapter">,
  run: Pick<CliRun, "process" | "stream" | "evidence">,
  context: { timeoutMs: number; model?: string | undefined },
): CliVerdict {
  const { process: proc, stream, evidence } = run;
  const who = `${entry.name}${context.model ? ` (model ${context.model})` : ""}`;
  if (proc.termination === "spawn_failed") {
    const reason = [proc.spawnError?.code, proc.spawnError?.message].filter(Boolean).join(" ");
    return failed("spawn_failed", `could not start ${who} at ${entry.executable}: ${reason}`, false);
  }
  if (stream.kind === "success") return { kind: "completed", stream };
  if (stream.kind === "error") return failed(stream.code, stream.message, RETRYABLE_STREAM_ERRORS.has(stream.code));
  if (proc.termination === "aborted") return { kind: "aborted" };
  if (proc.termination === "timeout") {
    if (evidence.networkErrors.length > 0) {
      return failed(
        "network_error",
        `${who} could not reach its API (${evidence.networkErrors.length} network errors, last: ${evidence.networkErrors.at(-1)}) and was killed at the ${context.timeoutMs} ms timeout`,
        true,
      );
    }
    return failed(
      "timeout",
      `${who} ran for ${seconds(proc.durationMs)} with no result and was killed at the timeout (${context.timeoutMs} ms)`,
      true,
    );
  }
  const byExit = entry.adapter.classifyExit?.(proc.exitCode, proc.stderrTail);
  if (byExit) return failed(byExit.code, byExit.message, false);
  const status = proc.exitSignal ? `was killed by ${proc.exitSignal}` : `exited with code ${proc.exitCode}`;
  const stderr = proc.stderrTail.length > 0 ? `; last stderr lines: ${proc.stderrTail.slice(-5).join(" | ")}` : "; stderr was empty";
  return failed("incomplete_output", `${who} ${status} without a final result event${stderr}`, true);
}

/** The vendor was unreachable or unavailable: another attempt may well succeed. Everything else the CLI reported would recur. */
const RETRYABLE_STREAM_ERRORS: ReadonlySet<string> = new Set(["network_error", "api_unavailable"]);

function failed(code: JobFailure["code"], message: string, retryable: boolean): CliVerdict {
  return { kind: "failed", failure: { code, message, retryable } };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
