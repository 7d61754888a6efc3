/**
 * Job kind `employee_turn`: run the employee itself — not a team member: no scaffold, no member
 * token — on one prompt, in its own workspace `<home>/agents/<employee>/` (the directory its team's
 * executors write into), and report what the run changed there.
 *
 * With a usable `employee_token` (issue 21 item 5) the run gets the crewplane MCP server with the
 * employee's own tools (`evolution_status`, `evolution_toggle`, as far as its tool lists allow),
 * from an identity file in the job's work dir that is removed when the job ends (members/employee-mcp.ts).
 * Without one — none sent, or `[redacted]` in a job rebuilt from its row — no crewplane server at all.
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
import { removeEmployeeMcp, usableEmployeeToken, writeEmployeeMcp } from "../members/employee-mcp.ts";
import type { EmployeeMcp } from "../members/employee-mcp.ts";
import { MEMBER_RUNTIMES, employeeWorkspace } from "../members/scaffold.ts";
import { ranReport } from "../members/stage-result.ts";
import { employeeTools, withoutCrewplaneTools } from "../members/tools.ts";
import type { EmployeeTool, RoleTools } from "../members/tools.ts";
import { buildTurnResult } from "../members/turn-result.ts";
import type { EmployeeTurnResult } from "../members/turn-result.ts";
import { renderRunSoul, soulDenyRules } from "../members/soul-guard.ts";
import type { RenderedSoul } from "../members/soul-guard.ts";
import { scanWorkspace, workspaceEvidence } from "../members/workspace-scan.ts";
import type { JobFailure } from "../protocol.ts";
import type { RuntimeEntry } from "../runtimes/index.ts";
import { maskSecrets } from "../runtimes/evidence.ts";
import { classifyCliRun, runCli } from "../runtimes/invoke.ts";
import { respond } from "../runtimes/offline.ts";
import { EFFORTS } from "../runtimes/types.ts";
import type { CliInput } from "../runtimes/types.ts";
import { createWorkDir } from "../work-dir.ts";
import { readCallLog } from "./team-stage.ts";
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
    // The employee's own MCP identity (issue 21 item 5). Loose on purpose: a token this runner cannot
    // use (absent, `[redacted]`, malformed) means a run without the crewplane server, never a failed turn.
    employee_token: z.string().nullish(),
    employee_token_expires_at: z.string().nullish(),
    // The employee's SOUL and its fingerprint (issue 23): rendered as SOUL.md in the work dir and
    // checked before the run (members/soul-guard.ts). Absent (an older Worker): the identity as before.
    soul: z
      .object({
        version: z.number().int().min(1),
        content: z.string().min(1).max(60_000),
        sha256: z.string().regex(/^[0-9a-f]{64}$/),
        read_only: z.boolean(),
      })
      .loose()
      .nullish(),
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
    // The offline runtime reads no SOUL, but the guard runs all the same: drift is drift whoever runs.
    const soul = p.soul ? await renderRunSoul(await createWorkDir(ctx.home, job.job_id), p.soul) : undefined;
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
    const guarded: EmployeeTurnResult = soul ? { ...result, soul_guard: await soul.checkAfterRun() } : result;
    return { kind: "completed", result: guarded };
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
  const token = usableEmployeeToken(p.employee_token);
  // Masked wherever a run's own words are reported (the text, a failure message), whatever produced them.
  const secrets = token ? [token] : [];
  const tools = employeeTools({
    allowed_tools: p.employee.capabilities?.allowed_tools ?? undefined,
    denied_tools: p.employee.capabilities?.denied_tools ?? undefined,
  });
  let mcp: EmployeeMcp | undefined;
  try {
    // Before the run, from the payload: the SOUL this run uses, checked against its fingerprint.
    const soul = p.soul ? await renderRunSoul(workDir, p.soul) : undefined;
    if (token && ctx.apiUrl && takesMcpConfigOutsideCwd(entry.name) && tools.crewplaneTools.length > 0) {
      mcp = await writeEmployeeMcp({
        workDir,
        apiUrl: ctx.apiUrl,
        employeeId: p.employee_id,
        token,
        expiresAt: p.employee_token_expires_at ?? undefined,
        tools: tools.crewplaneTools,
        launch: ctx.mcpLaunch,
      });
    }
    const input = await turnInput(p, workspace, workDir, mcp ? tools : withoutCrewplaneTools(tools), mcp, ctx.codexMcpApprovalMode, soul);
    const run = await runCli(entry, input, {
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
      const raw = verdict.failure.message.includes(who) ? verdict.failure.message : `${who}: ${verdict.failure.message}`;
      return { kind: "failed", failure: { ...verdict.failure, message: maskSecrets(raw, secrets), ...(ran ? { ran } : {}) } };
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
      ...(mcp ? { calls: await readCallLog(mcp.callsLogPath) } : {}),
      secrets,
    });
    const guarded: EmployeeTurnResult = soul ? { ...result, soul_guard: await soul.checkAfterRun() } : result;
    return { kind: "completed", result: guarded };
  } finally {
    // On every way out (success, failure, timeout, abort, a throw): the token dies with the job.
    if (mcp) await removeEmployeeMcp(mcp).catch(() => undefined);
  }
}

/**
 * Only claude (`--mcp-config <file> --strict-mcp-config`) and codex (`-c mcp_servers.*`) take an MCP
 * config from outside their cwd. antigravity (agy, gemini) and grok read it from the cwd — here the
 * employee workspace, where a config would be reported as the employee's change and could clobber
 * the employee's own `.gemini/` or `.grok/` — or from their home dir, which also holds their login.
 * So they run without the crewplane server, as every employee turn did before issue 21.
 */
function takesMcpConfigOutsideCwd(runtime: string): boolean {
  return runtime === "claude" || runtime === "codex";
}

/**
 * The CLI call. Adapters read the tools and the sandbox, not the role; "executor" is named because
 * the employee's own turn does what an executor does (works in the workspace with the employee's
 * tools). `mcp` is the employee's own server when it has one (never a member identity); its tools
 * are then in `tools`, otherwise no crewplane tool is. Files an adapter writes (grok's prompt file)
 * go to the job's work dir (`memberDir`), so they never show up as workspace changes.
 * The identity reaches claude as a system prompt file; the other CLIs have no system-prompt flag
 * without a scaffold, and the Worker puts the identity in the prompt anyway.
 */
async function turnInput(
  p: EmployeeTurnPayload,
  workspace: string,
  workDir: string,
  tools: RoleTools<EmployeeTool>,
  mcp: EmployeeMcp | undefined,
  codexMcpApprovalMode: string | undefined,
  soul: RenderedSoul | undefined,
): Promise<CliInput> {
  let soulPath: string | undefined;
  let deniedTools = tools.deniedTools;
  if (soul) {
    // The SOUL reaches claude as its system prompt file, the other CLIs as the role block of their
    // prompt. Read-only: claude is denied edits of the file (the others are sandboxed to the workspace).
    soulPath = soul.path;
    if (soul.report.read_only) deniedTools = [...deniedTools, ...soulDenyRules(soul.path)];
  } else if (p.runtime === "claude") {
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
    ...(mcp ? { mcp: { configPath: mcp.configPath, server: mcp.server } } : {}),
    ...(mcp && codexMcpApprovalMode ? { codexMcpApprovalMode } : {}),
    allowedTools: tools.tools,
    deniedTools,
    sandbox: tools.sandbox,
    ...(soulPath && p.runtime === "claude" ? { soulPath } : {}),
    ...(soul && p.runtime !== "claude" ? { roleInstructions: soul.content } : {}),
  };
}

function failed(code: JobFailure["code"], message: string, retryable: boolean): JobOutcome {
  return { kind: "failed", failure: { code, message, retryable } };
}
