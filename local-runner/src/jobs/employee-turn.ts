/**
 * Job kind `employee_turn`: run the employee itself — not a team member: no scaffold, no member
 * token, no crewplane MCP config — on one prompt, in its own workspace `<home>/agents/<employee>/`
 * (the directory its team's executors write into), and report what the run changed there.
 *
 * workspace snapshot → the runtime (offline answers without running anything; a CLI runs with the
 * employee's model, effort and tools, the prompt on stdin or in a prompt file, never in argv) →
 * classification as for utility jobs → a second snapshot → receipts for the re-check paths and
 * every change (members/workspace-scan.ts) → the result (members/turn-result.ts).
 *
 * An employee with `sandbox_enabled` runs only where a sandbox exists: codex brings its own
 * (`workspace-write` at most); the runner has none for the other CLIs, so those fail
 * `sandbox_unavailable`. The offline runtime runs no tool at all, so it answers either way.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { MEMBER_RUNTIMES, employeeWorkspace } from "../members/scaffold.ts";
import { ranReport } from "../members/stage-result.ts";
import { employeeTools } from "../members/tools.ts";
import { buildTurnResult } from "../members/turn-result.ts";
import { scanWorkspace, workspaceEvidence } from "../members/workspace-scan.ts";
import type { JobFailure } from "../protocol.ts";
import type { RuntimeEntry } from "../runtimes/index.ts";
import { classifyCliRun, runCli } from "../runtimes/invoke.ts";
import { respond } from "../runtimes/offline.ts";
import { EFFORTS } from "../runtimes/types.ts";
import type { CliInput } from "../runtimes/types.ts";
import { createWorkDir } from "../work-dir.ts";
import type { JobContext, JobOutcome } from "./utility.ts";

const id = z.string().min(1).max(128);

/** What the runner needs of the Worker's `employee_turn` payload. Loose: a newer Worker may add fields. */
export const employeeTurnPayloadSchema = z
  .object({
    runtime: z.enum(["offline", ...MEMBER_RUNTIMES]),
    model: z.string().min(1).max(200),
    effort: z.enum(EFFORTS).nullish(),
    employee_id: id,
    employee: z
      .object({
        name: z.string().min(1).max(200),
        identity: z.string().max(20_000).nullish(),
        capabilities: z
          .object({ allowed_tools: z.array(z.string()).nullish(), denied_tools: z.array(z.string()).nullish() })
          .loose()
          .nullish(),
        sandbox_enabled: z.boolean().nullish(),
        config_json: z.string().nullish(),
      })
      .loose(),
    // Informational (goal_round | conversation): a value this runner does not know changes nothing.
    purpose: z.string().min(1).max(64),
    task_id: id.nullish(),
    round_id: id.nullish(),
    round: z.number().int().min(0).nullish(),
    stage_id: id.nullish(),
    prompt: z.string().min(1),
    recheck_paths: z.array(z.string().min(1).max(4096)).max(64).nullish(),
    timeout_ms: z.number().int().positive(),
  })
  .loose();
export type EmployeeTurnPayload = z.infer<typeof employeeTurnPayloadSchema>;

export async function runEmployeeTurnJob(job: { job_id: string; payload: unknown }, ctx: JobContext): Promise<JobOutcome> {
  const parsed = employeeTurnPayloadSchema.safeParse(job.payload);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return failed("unsupported_job", `invalid employee_turn payload: ${issues}`, false);
  }
  const p = parsed.data;
  const who = `${p.runtime} (model ${p.model})`;
  const entry = ctx.runtimes.get(p.runtime);
  if (!entry) {
    const advertised = [...ctx.runtimes.keys()].join(", ");
    return failed("unsupported_job", `runtime ${who} is not available on this runner (it offers: ${advertised})`, false);
  }
  if (p.employee.sandbox_enabled === true && entry.kind === "cli" && entry.name !== "codex") {
    return failed(
      "sandbox_unavailable",
      `employee ${p.employee_id} has sandbox_enabled, and this runner has no sandbox for ${p.runtime}: ` +
        "run the employee on codex (its own workspace-write sandbox) or turn sandbox_enabled off",
      false,
    );
  }
  let workspace: string;
  try {
    workspace = employeeWorkspace(ctx.home, p.employee_id);
  } catch (err) {
    return failed("unsupported_job", (err as Error).message, false);
  }
  await mkdir(workspace, { recursive: true });
  const recheck = p.recheck_paths ?? [];
  const before = await scanWorkspace(workspace);

  if (entry.kind === "builtin") {
    const started = performance.now();
    const answer = respond(p.prompt);
    const durationMs = Math.round(performance.now() - started);
    const evidence = await workspaceEvidence(workspace, before, await scanWorkspace(workspace), recheck);
    const result = buildTurnResult({
      runtime: "offline",
      stream: { text: answer.text, model: answer.model },
      durationMs,
      nativeEvents: [],
      workspace: evidence,
    });
    return { kind: "completed", result };
  }
  if (ctx.signal.aborted) return { kind: "aborted" };
  return runCliTurn(job.job_id, p, entry, workspace, before, ctx);
}

async function runCliTurn(
  jobId: string,
  p: EmployeeTurnPayload,
  entry: Extract<RuntimeEntry, { kind: "cli" }>,
  workspace: string,
  before: Awaited<ReturnType<typeof scanWorkspace>>,
  ctx: JobContext,
): Promise<JobOutcome> {
  const who = `${p.runtime} (model ${p.model})`;
  const workDir = await createWorkDir(ctx.home, jobId);
  const run = await runCli(entry, await turnInput(p, workspace, workDir), {
    logDir: workDir,
    timeoutMs: p.timeout_ms,
    signal: ctx.signal,
    ...(ctx.env ? { env: ctx.env } : {}),
    ...(ctx.killGraceMs !== undefined ? { killGraceMs: ctx.killGraceMs } : {}),
  });
  const verdict = classifyCliRun(entry, run, { timeoutMs: p.timeout_ms, model: p.model });
  if (verdict.kind === "aborted") return verdict;
  if (verdict.kind === "failed") {
    // What ran, for the ledger; a CLI that never started ran nothing.
    const ran = run.process.termination === "spawn_failed" ? undefined : ranReport(entry.name, entry.adapter.command, run.stream.model);
    const message = verdict.failure.message.includes(who) ? verdict.failure.message : `${who}: ${verdict.failure.message}`;
    return { kind: "failed", failure: { ...verdict.failure, message, ...(ran ? { ran } : {}) } };
  }
  const evidence = await workspaceEvidence(workspace, before, await scanWorkspace(workspace), p.recheck_paths ?? []);
  const result = buildTurnResult({
    runtime: entry.name,
    cli: entry.adapter.command,
    stream: verdict.stream,
    durationMs: run.process.durationMs,
    effort: run.invocation.effort,
    nativeEvents: run.evidence.nativeEvents,
    workspace: evidence,
  });
  return { kind: "completed", result };
}

/**
 * The CLI call. Adapters read the tools and the sandbox, not the role; "executor" is named because
 * the employee's own turn does what an executor does (works in the workspace with the employee's
 * tools). No `mcp`: the employee's own turn carries no member identity. Files an adapter writes (grok's
 * prompt file) go to the job's work dir (`memberDir`), so they never show up as workspace changes.
 * The identity reaches claude as a system prompt file; the other CLIs have no system-prompt flag
 * without a scaffold, and the Worker puts the identity in the prompt anyway.
 */
async function turnInput(p: EmployeeTurnPayload, workspace: string, workDir: string): Promise<CliInput> {
  const tools = employeeTools({
    allowed_tools: p.employee.capabilities?.allowed_tools ?? undefined,
    denied_tools: p.employee.capabilities?.denied_tools ?? undefined,
  });
  let soulPath: string | undefined;
  if (p.runtime === "claude") {
    soulPath = join(workDir, "identity.md");
    const identity = p.employee.identity?.trim() || `You are ${p.employee.name}.`;
    await writeFile(soulPath, `# Identity\n\n${identity}\n`, { mode: 0o600 });
  }
  return {
    prompt: p.prompt,
    cwd: workspace,
    role: "executor",
    model: p.model,
    ...(p.effort ? { effort: p.effort } : {}),
    memberDir: workDir,
    allowedTools: tools.tools,
    deniedTools: tools.deniedTools,
    sandbox: tools.sandbox,
    ...(soulPath ? { soulPath } : {}),
  };
}

function failed(code: JobFailure["code"], message: string, retryable: boolean): JobOutcome {
  return { kind: "failed", failure: { code, message, retryable } };
}
