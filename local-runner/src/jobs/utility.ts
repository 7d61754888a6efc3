/**
 * Job kind `utility`: run one prompt on one runtime and return its final text.
 */
import { join } from "node:path";
import { z } from "zod";
import type { JobFailure, JobResult } from "../protocol.ts";
import { runProcess } from "../process-runner.ts";
import type { ProcessOutcome } from "../process-runner.ts";
import { respond } from "../runtimes/offline.ts";
import type { RuntimeEntry, RuntimeTable } from "../runtimes/index.ts";
import type { StreamOutcome } from "../runtimes/types.ts";
import { createWorkDir } from "../work-dir.ts";

export const utilityPayloadSchema = z.object({
  runtime: z.string().min(1),
  prompt: z.string(),
  // null is read as "not given" so a Worker that serializes absent fields as null still works.
  model: z.string().min(1).nullish(),
  timeout_ms: z.number().int().positive(),
});
export type UtilityPayload = z.infer<typeof utilityPayloadSchema>;

/**
 * `aborted` means the runner itself stopped the job (stale lease or shutdown) before any final
 * answer existed; the poll loop knows which and decides what, if anything, to report.
 */
export type JobOutcome = { kind: "completed"; result: JobResult } | { kind: "failed"; failure: JobFailure } | { kind: "aborted" };

export interface JobContext {
  runtimes: RuntimeTable;
  home: string;
  signal: AbortSignal;
  /** Environment for model CLIs; defaults to the runner's own. */
  env?: NodeJS.ProcessEnv;
  killGraceMs?: number;
}

export async function runUtilityJob(job: { job_id: string; payload: unknown }, ctx: JobContext): Promise<JobOutcome> {
  const parsed = utilityPayloadSchema.safeParse(job.payload);
  if (!parsed.success) {
    return failed(
      "unsupported_job",
      `invalid utility payload: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`,
      false,
    );
  }
  const payload = parsed.data;
  const entry = ctx.runtimes.get(payload.runtime);
  if (!entry) {
    const advertised = [...ctx.runtimes.keys()].join(", ");
    return failed("unsupported_job", `runtime "${payload.runtime}" is not available on this runner (it offers: ${advertised})`, false);
  }
  if (entry.kind === "builtin") return runOffline(payload);
  return runCli(job.job_id, payload, entry, ctx);
}

function runOffline(payload: UtilityPayload): JobOutcome {
  const started = performance.now();
  const answer = respond(payload.prompt);
  return {
    kind: "completed",
    result: { text: answer.text, runtime: "offline", model: answer.model, duration_ms: Math.round(performance.now() - started) },
  };
}

async function runCli(
  jobId: string,
  payload: UtilityPayload,
  entry: Extract<RuntimeEntry, { kind: "cli" }>,
  ctx: JobContext,
): Promise<JobOutcome> {
  const workDir = await createWorkDir(ctx.home, jobId);
  const parser = entry.adapter.createParser();
  const input = { prompt: payload.prompt, ...(payload.model ? { model: payload.model } : {}) };
  const outcome = await runProcess({
    command: entry.executable,
    args: entry.adapter.buildArgv(input),
    cwd: workDir,
    ...(ctx.env ? { env: ctx.env } : {}),
    timeoutMs: payload.timeout_ms,
    ...(ctx.killGraceMs !== undefined ? { killGraceMs: ctx.killGraceMs } : {}),
    stdoutPath: join(workDir, "stream.jsonl"),
    stderrPath: join(workDir, "stderr.log"),
    onStdoutLine: (line) => parser.push(line),
    signal: ctx.signal,
  });
  return interpretRun(entry, payload, outcome, parser.finish());
}

/**
 * The stream's final event decides the result whenever there is one — even if the process then
 * lingered and was killed — because it is the CLI's own verdict. Exit status only explains its absence.
 */
export function interpretRun(
  entry: { name: string; executable: string },
  payload: UtilityPayload,
  run: ProcessOutcome,
  stream: StreamOutcome,
): JobOutcome {
  if (run.termination === "spawn_failed") {
    const reason = [run.spawnError?.code, run.spawnError?.message].filter(Boolean).join(" ");
    return failed("spawn_failed", `could not start ${entry.name} (${entry.executable}): ${reason}`, false);
  }
  if (stream.kind === "success") {
    const model = stream.model ?? payload.model ?? undefined;
    return {
      kind: "completed",
      result: {
        text: stream.text,
        runtime: entry.name,
        ...(model ? { model } : {}),
        ...(stream.sessionId ? { session_id: stream.sessionId } : {}),
        duration_ms: run.durationMs,
        ...(stream.usage ? { usage: stream.usage } : {}),
        ...(stream.costUsd !== undefined ? { cost_usd: stream.costUsd } : {}),
      },
    };
  }
  if (stream.kind === "error") return failed(stream.code, stream.message, false);
  if (run.termination === "aborted") return { kind: "aborted" };
  if (run.termination === "timeout") {
    return failed(
      "timeout",
      `${entry.name} ran for ${seconds(run.durationMs)} with no result and was killed at the job's timeout_ms (${payload.timeout_ms} ms)`,
      true,
    );
  }
  const status = run.exitSignal ? `was killed by ${run.exitSignal}` : `exited with code ${run.exitCode}`;
  const stderr = run.stderrTail.length > 0 ? `; last stderr lines: ${run.stderrTail.slice(-5).join(" | ")}` : "; stderr was empty";
  return failed("incomplete_output", `${entry.name} ${status} without a final result event${stderr}`, true);
}

function failed(code: JobFailure["code"], message: string, retryable: boolean): JobOutcome {
  return { kind: "failed", failure: { code, message, retryable } };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
