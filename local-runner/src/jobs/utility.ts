/**
 * Job kind `utility`: run one prompt on one runtime and return its final text. The prompt reaches the
 * CLI on stdin (or a prompt file), never in argv. `output_schema` names a JSON Schema the answer is
 * held to where the CLI can enforce one (codex `--output-schema`; output-schemas.ts).
 *
 * `workspace` (issue 22, the 2×2's fixed verifier) names an isolated workspace on this runner
 * (`<home>/eval-workspaces/<key>/`, eval/isolated-workspace.ts) and paths in it: their contents and an
 * `<artifact_receipts>` block are appended to the prompt (eval/workspace-block.ts), and the result
 * reports the same contents as `files`. A workspace that is not there fails the job (`workspace_missing`).
 */
import { z } from "zod";
import { observedWorkspace } from "../../../src/jobs/isolated-workspace.ts";
import { findIsolatedWorkspace, isolatedWorkspaceDir, useIsolatedWorkspace } from "../eval/isolated-workspace.ts";
import { levelObserved, workspaceBlock } from "../eval/workspace-block.ts";
import { observeFiles } from "../eval/workspace.ts";
import type { ObservedFiles } from "../eval/workspace.ts";
import { TURN_RESULT_BYTES } from "../members/turn-result.ts";
import type { AttachmentUpload } from "../api-client.ts";
import type { JobFailure, JobResult } from "../protocol.ts";
import type { RuntimeEntry, RuntimeTable } from "../runtimes/index.ts";
import { classifyCliRun, runCli } from "../runtimes/invoke.ts";
import { respond } from "../runtimes/offline.ts";
import { createWorkDir } from "../work-dir.ts";
import { OUTPUT_SCHEMA_NAMES, writeOutputSchema } from "./output-schemas.ts";

export const utilityPayloadSchema = z.object({
  runtime: z.string().min(1),
  prompt: z.string(),
  // null is read as "not given" so a Worker that serializes absent fields as null still works.
  model: z.string().min(1).nullish(),
  timeout_ms: z.number().int().positive(),
  output_schema: z.enum(OUTPUT_SCHEMA_NAMES).nullish(),
  workspace: observedWorkspace.nullish(),
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
  /** The Worker's base URL, which crewplane MCP servers call: a member's with its member token, an employee turn's with its employee token. */
  apiUrl?: string;
  /** For the round checks of team stages (tests inject one). */
  fetch?: typeof fetch;
  /** How often a running team member's round is checked (default 15 s). */
  roundCheckMs?: number;
  /** Codex's approval mode for the crewplane MCP server (default `approve`; the seed's codex used `auto`). */
  codexMcpApprovalMode?: string;
  /** How members and employee turns start the crewplane MCP server (default local-runner/bin/crewplane-mcp). */
  mcpLaunch?: { command: string; args: string[] };
  /** Uploads one file of an `attachments_archive` job under its lease (the poll loop binds it to the job). */
  uploadAttachment?: (file: AttachmentUpload) => Promise<void>;
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
  let payload = parsed.data;
  const entry = ctx.runtimes.get(payload.runtime);
  if (!entry) {
    const advertised = [...ctx.runtimes.keys()].join(", ");
    return failed("unsupported_job", `runtime "${payload.runtime}" is not available on this runner (it offers: ${advertised})`, false);
  }
  let observed: ObservedFiles | undefined;
  if (payload.workspace) {
    const { key, observe_paths: paths } = payload.workspace;
    const release = useIsolatedWorkspace(ctx.home, key);
    try {
      const dir = await findIsolatedWorkspace(ctx.home, key);
      if (!dir) {
        return failed(
          "workspace_missing",
          `isolated workspace ${key} (${isolatedWorkspaceDir(ctx.home, key)}) is not on this runner: its arm never ran here, or it was swept`,
          false,
        );
      }
      observed = levelObserved(await observeFiles(dir, paths));
    } finally {
      release();
    }
    payload = { ...payload, prompt: payload.prompt + workspaceBlock(paths, observed) };
  }
  const outcome = entry.kind === "builtin" ? runOffline(payload) : await runCliJob(job.job_id, payload, entry, ctx);
  return observed && outcome.kind === "completed" ? { kind: "completed", result: withFiles(outcome.result, observed) } : outcome;
}

/** A utility result with the workspace's files (null: absent or not read), the whole kept under the Worker's limit. */
export type WorkspaceUtilityResult = JobResult & {
  files: Record<string, string | null>;
  /** Paths whose content was cut (at 64 KiB on reading, or to keep prompt and result in budget). */
  truncated_files?: string[];
  /** Paths that exist but are not a regular file, or lead out of the workspace. */
  unreadable_files?: string[];
  /** The answer's end was cut to keep the result under the Worker's limit. */
  text_truncated?: true;
};

function withFiles(result: JobResult, observed: ObservedFiles): WorkspaceUtilityResult {
  const out: WorkspaceUtilityResult = {
    ...result,
    files: observed.files,
    ...(observed.truncated.length > 0 ? { truncated_files: observed.truncated } : {}),
    ...(observed.unreadable.length > 0 ? { unreadable_files: observed.unreadable } : {}),
  };
  // The files are levelled already; only an answer of hundreds of KiB could still overflow: its end goes.
  const over = Buffer.byteLength(JSON.stringify(out)) - TURN_RESULT_BYTES;
  if (over > 0) {
    let end = Math.max(0, out.text.length - over - 64);
    if (end > 0 && /[\uD800-\uDBFF]/.test(out.text[end - 1]!)) end -= 1;
    out.text = `${out.text.slice(0, end)}…`;
    out.text_truncated = true;
  }
  return out;
}

function runOffline(payload: UtilityPayload): JobOutcome {
  const started = performance.now();
  const answer = respond(payload.prompt);
  return {
    kind: "completed",
    result: { text: answer.text, runtime: "offline", model: answer.model, duration_ms: Math.round(performance.now() - started) },
  };
}

async function runCliJob(
  jobId: string,
  payload: UtilityPayload,
  entry: Extract<RuntimeEntry, { kind: "cli" }>,
  ctx: JobContext,
): Promise<JobOutcome> {
  const workDir = await createWorkDir(ctx.home, jobId);
  const model = payload.model ?? undefined;
  const outputSchemaPath = payload.output_schema ? await writeOutputSchema(workDir, payload.output_schema) : undefined;
  const run = await runCli(
    entry,
    {
      prompt: payload.prompt,
      cwd: workDir,
      role: "utility",
      ...(model ? { model } : {}),
      ...(outputSchemaPath ? { outputSchemaPath } : {}),
    },
    {
      logDir: workDir,
      timeoutMs: payload.timeout_ms,
      signal: ctx.signal,
      ...(ctx.env ? { env: ctx.env } : {}),
      ...(ctx.killGraceMs !== undefined ? { killGraceMs: ctx.killGraceMs } : {}),
    },
  );
  const verdict = classifyCliRun(entry, run, { timeoutMs: payload.timeout_ms, model });
  if (verdict.kind !== "completed") return verdict;
  const stream = verdict.stream;
  const reportedModel = stream.model ?? model;
  return {
    kind: "completed",
    result: {
      text: stream.text,
      runtime: entry.name,
      ...(reportedModel ? { model: reportedModel } : {}),
      ...(stream.sessionId ? { session_id: stream.sessionId } : {}),
      duration_ms: run.process.durationMs,
      ...(stream.usage ? { usage: stream.usage } : {}),
      ...(stream.costUsd !== undefined ? { cost_usd: stream.costUsd } : {}),
      // The final event carried no text and the answer was taken from the stream's last message.
      ...(stream.messageRecovered ? { message_recovered_from_stream: true } : {}),
    },
  };
}

function failed(code: JobFailure["code"], message: string, retryable: boolean): JobOutcome {
  return { kind: "failed", failure: { code, message, retryable } };
}
