/**
 * Job kind `eval_case` (issue 22: the role × model capability matrix; later the scoring of evolution
 * candidates): one eval case, live, on one runtime and model, in an isolated directory, reported as
 * it came out. The Worker scores the result with deterministic assertions; the runner judges nothing.
 *
 * fresh `<home>/eval/<job_id>/` seeded with the case's workspace files (eval/workspace.ts) → the
 * runtime (offline answers `respond(prompt)` and touches nothing, so an assertion that needs a
 * written file fails honestly; a CLI runs there with the employee tool set the payload names, the
 * prompt on stdin or in a prompt file, never in argv, and no MCP server at all) → classification as
 * for every CLI call → the observe paths read back → the result (eval/result.ts).
 *
 * The eval dir is removed on every way out (success, failure, timeout, abort, a throw): it holds only
 * the payload's files and what the run made of them, and a failed run's files are no evidence the
 * Worker scores. The run's raw output (`stream.jsonl`, `stderr.log`) goes to the job's work dir
 * `<home>/work/<job_id>/`, never into the eval dir, and follows the work-dir convention: removed once
 * the Worker took the result, kept `keep_failed_work_hours` after anything else. A dir a killed
 * runner left in `<home>/eval/` is swept with the work dirs (work-janitor.ts).
 */
import { z } from "zod";
import { buildEvalResult } from "../eval/result.ts";
import { createEvalDir, observeFiles, seedEvalDir, seedPathProblem } from "../eval/workspace.ts";
import { MEMBER_RUNTIMES } from "../members/scaffold.ts";
import { ranReport } from "../members/stage-result.ts";
import { employeeTools, withoutCrewplaneTools } from "../members/tools.ts";
import type { JobFailure } from "../protocol.ts";
import type { RuntimeEntry } from "../runtimes/index.ts";
import { classifyCliRun, runCli } from "../runtimes/invoke.ts";
import { respond } from "../runtimes/offline.ts";
import { EFFORTS } from "../runtimes/types.ts";
import { createWorkDir } from "../work-dir.ts";
import type { JobContext, JobOutcome } from "./utility.ts";

const id = z.string().min(1).max(200);

/** What the runner needs of the Worker's `eval_case` payload. Loose: a newer Worker may add fields. */
export const evalCasePayloadSchema = z
  .object({
    runtime: z.enum(["offline", ...MEMBER_RUNTIMES]),
    // null is read as "not given", as in utility payloads.
    model: z.string().min(1).max(200).nullish(),
    effort: z.enum(EFFORTS).nullish(),
    run_id: id,
    case_id: id,
    domain: id,
    // Informational: whose tools these are. The tools themselves come in `tools`.
    employee_id: id.nullish(),
    tools: z
      .object({ allowed_tools: z.array(z.string()).nullish(), denied_tools: z.array(z.string()).nullish() })
      .loose()
      .nullish(),
    prompt: z.string().min(1),
    workspace_files: z.record(z.string(), z.string()),
    observe_paths: z.array(z.string().min(1).max(4096)).max(64),
    timeout_ms: z.number().int().positive(),
  })
  .loose();
export type EvalCasePayload = z.infer<typeof evalCasePayloadSchema>;

export async function runEvalCaseJob(job: { job_id: string; payload: unknown }, ctx: JobContext): Promise<JobOutcome> {
  const parsed = evalCasePayloadSchema.safeParse(job.payload);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return failed("unsupported_job", `invalid eval_case payload: ${issues}`);
  }
  const p = parsed.data;
  const who = `${p.runtime}${p.model ? ` (model ${p.model})` : ""}`;
  const entry = ctx.runtimes.get(p.runtime);
  if (!entry) {
    const advertised = [...ctx.runtimes.keys()].join(", ");
    return failed("unsupported_job", `runtime ${who} is not available on this runner (it offers: ${advertised})`);
  }
  // Every seed path is checked before anything is written: a refused case leaves nothing behind.
  const refused = Object.keys(p.workspace_files).flatMap((path) => {
    const problem = seedPathProblem(path);
    return problem ? [`${JSON.stringify(path)} ${problem}`] : [];
  });
  if (refused.length > 0) {
    return failed("unsupported_job", `eval case ${p.domain}/${p.case_id}: workspace file ${refused.slice(0, 5).join("; ")}`);
  }
  if (ctx.signal.aborted) return { kind: "aborted" };

  const evalDir = await createEvalDir(ctx.home, job.job_id);
  const dir = evalDir.path;
  try {
    try {
      await seedEvalDir(dir, p.workspace_files);
    } catch (err) {
      return failed("unsupported_job", `eval case ${p.domain}/${p.case_id}: cannot seed its workspace: ${(err as Error).message}`);
    }
    if (entry.kind === "builtin") {
      const started = performance.now();
      const answer = respond(p.prompt);
      const durationMs = Math.round(performance.now() - started);
      return {
        kind: "completed",
        result: buildEvalResult({
          runtime: "offline",
          stream: { text: answer.text, model: answer.model },
          durationMs,
          exitStatus: null,
          nativeEvents: [],
          observed: await observeFiles(dir, p.observe_paths),
        }),
      };
    }
    return await runCliCase(job.job_id, p, entry, dir, ctx);
  } finally {
    await evalDir.remove().catch(() => undefined);
  }
}

async function runCliCase(
  jobId: string,
  p: EvalCasePayload,
  entry: Extract<RuntimeEntry, { kind: "cli" }>,
  dir: string,
  ctx: JobContext,
): Promise<JobOutcome> {
  const who = `${p.runtime}${p.model ? ` (model ${p.model})` : ""}`;
  const workDir = await createWorkDir(ctx.home, jobId);
  // The employee tool set (members/tools.ts) the payload names, or the default one; never a crewplane
  // tool, since an eval case runs with no MCP server at all.
  const tools = withoutCrewplaneTools(
    employeeTools({ allowed_tools: p.tools?.allowed_tools ?? undefined, denied_tools: p.tools?.denied_tools ?? undefined }),
  );
  const model = p.model ?? undefined;
  const run = await runCli(
    entry,
    {
      prompt: p.prompt,
      cwd: dir,
      // Adapters read the tools and the sandbox, not the role; an eval case works like an executor.
      role: "executor",
      ...(model ? { model } : {}),
      ...(p.effort ? { effort: p.effort } : {}),
      // Files an adapter writes (grok's prompt file) go to the work dir, never into the case's dir.
      memberDir: workDir,
      allowedTools: tools.tools,
      deniedTools: tools.deniedTools,
      sandbox: tools.sandbox,
      noMcpServers: true,
    },
    {
      logDir: workDir,
      timeoutMs: p.timeout_ms,
      signal: ctx.signal,
      ...(ctx.env ? { env: ctx.env } : {}),
      ...(ctx.killGraceMs !== undefined ? { killGraceMs: ctx.killGraceMs } : {}),
    },
  );
  const verdict = classifyCliRun(entry, run, { timeoutMs: p.timeout_ms, model });
  if (verdict.kind === "aborted") return verdict;
  if (verdict.kind === "failed") {
    // What ran, for the matrix; a CLI that never started ran nothing.
    const ran = run.process.termination === "spawn_failed" ? undefined : ranReport(entry.name, entry.adapter.command, run.stream.model);
    const message = verdict.failure.message.includes(who) ? verdict.failure.message : `${who}: ${verdict.failure.message}`;
    return { kind: "failed", failure: { ...verdict.failure, message, ...(ran ? { ran } : {}) } };
  }
  return {
    kind: "completed",
    result: buildEvalResult({
      runtime: entry.name,
      cli: entry.adapter.command,
      stream: verdict.stream,
      durationMs: run.process.durationMs,
      // A CLI the runner killed (one that lingered after its final event) or a signal ended has none.
      exitStatus: run.process.termination === "exited" ? run.process.exitCode : null,
      effort: run.invocation.effort,
      nativeEvents: run.evidence.nativeEvents,
      observed: await observeFiles(dir, p.observe_paths),
    }),
  };
}

function failed(code: JobFailure["code"], message: string): JobOutcome {
  return { kind: "failed", failure: { code, message, retryable: false } };
}
