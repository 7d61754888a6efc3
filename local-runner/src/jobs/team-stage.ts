/**
 * Job kind `team_stage` (seed 002; issues 10 and 11): run one role member for one stage of a team
 * round, and report what the Worker's `teamStageResult` reads.
 *
 * scaffold (`<home>/agents/.ephemeral/<task>-<round>-<role>-<stage>/`, with the member token and
 * the employee's config from the payload) → `member_mcp_config_missing` check → the role's CLI in
 * the employee workspace (claude, codex) or the scaffold (antigravity, grok) → classification (no
 * failover: a role never moves to another vendor) → the member's MCP call log, evidence rows and
 * artifact receipts → the result. The scaffold is removed on every way out of here (success, CLI
 * failure or crash, timeout, the round ending under it, the runner's shutdown); a runner killed
 * outright leaves it to the maintenance sweep (members/scaffold-janitor.ts).
 *
 * With `workspace` (issue 22, an eval arm of the team 2×2) the member works in the arm's isolated
 * workspace `<home>/eval-workspaces/<key>/` instead of the employee's (its cwd, its working state,
 * its receipts): made by the arm's first stage as a copy of the employee workspace with the case's
 * files over it, used as it is by every later stage (eval/isolated-workspace.ts).
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { isolatedWorkspace } from "../../../src/jobs/isolated-workspace.ts";
import { ensureIsolatedWorkspace, useIsolatedWorkspace } from "../eval/isolated-workspace.ts";
import type { McpCallRecord } from "../mcp/server.ts";
import { checkMemberRound } from "../members/round-check.ts";
import { checkArtifacts } from "../members/receipts.ts";
import {
  checkMemberMcpConfig,
  employeeWorkspace,
  MEMBER_RUNTIMES,
  memberCliInput,
  removeScaffold,
  writeScaffold,
} from "../members/scaffold.ts";
import type { Scaffold } from "../members/scaffold.ts";
import { guardMemberSoul } from "../members/soul-guard.ts";
import type { SoulGuardReport } from "../members/soul-guard.ts";
import { buildStageResult, declaredArtifacts, ranReport } from "../members/stage-result.ts";
import type { StageResult } from "../members/stage-result.ts";
import { VERDICT_SCHEMA } from "../members/verdict.ts";
import type { JobFailure, RanReport } from "../protocol.ts";
import { classifyCliRun, runCli } from "../runtimes/invoke.ts";
import { EFFORTS, ROLES } from "../runtimes/types.ts";
import { createWorkDir } from "../work-dir.ts";
import type { JobContext, JobOutcome } from "./utility.ts";

const id = z.string().min(1).max(128);

/**
 * What the runner needs of the Worker's `teamStagePayload`. Loose: a newer Worker may add fields.
 * `employee` carries the employee's effective config (tools, sandbox, identity); without it the
 * member gets the default tool set, which is what an employee without an allow-list has.
 */
export const teamStagePayloadSchema = z
  .object({
    runtime: z.enum(MEMBER_RUNTIMES),
    model: z.string().min(1).max(200),
    effort: z.enum(EFFORTS).nullish(),
    role: z.enum(ROLES),
    // synthesize: a utility member that sums the round up, read-only like a verifier; its text is
    // its result (no receipts: it writes nothing; no verdict: it judges nothing).
    stage: z.enum(["plan", "execute", "verify", "repair", "synthesize"]),
    task_id: id,
    round_id: id,
    round: z.number().int().min(1).max(99),
    stage_id: id,
    employee_id: id,
    member_token: z.string().min(1).max(200),
    member_token_expires_at: z.string().optional(),
    input: z
      .object({
        prompt: z.string().min(1),
        packet_ids: z.array(z.string()).optional(),
        output_schema: z.enum(["verdict"]).optional(),
      })
      .loose(),
    timeout_ms: z.number().int().positive(),
    employee: z
      .object({
        name: z.string().optional(),
        identity: z.string().max(20_000).optional(),
        config: z.record(z.string(), z.unknown()).optional(),
        /** The same as a JSON document (what the Worker sends: its RPC types cannot carry a free-form object). */
        config_json: z.string().optional(),
        capabilities: z
          .object({ allowed_tools: z.array(z.string()).optional(), denied_tools: z.array(z.string()).optional() })
          .loose()
          .optional(),
        sandbox_enabled: z.boolean().optional(),
        /** The employee's current SOUL (issue 23): the member's SOUL.md carries its content as the identity. */
        soul: z
          .object({
            version: z.number().int().min(1).optional(),
            content: z.string().min(1).max(60_000),
            sha256: z
              .string()
              .regex(/^[0-9a-f]{64}$/)
              .optional(),
          })
          .loose()
          .optional(),
      })
      .loose()
      .optional(),
    /** The arm's isolated workspace (src/jobs/isolated-workspace.ts): the member works there, not in the employee's. */
    workspace: isolatedWorkspace.optional(),
  })
  .loose();
export type TeamStageJobPayload = z.infer<typeof teamStagePayloadSchema>;

/** How often a running member's round is checked; a round that ended stops its member. */
export const DEFAULT_ROUND_CHECK_MS = 15_000;

export async function runTeamStageJob(job: { job_id: string; payload: unknown }, ctx: JobContext): Promise<JobOutcome> {
  const parsed = teamStagePayloadSchema.safeParse(job.payload);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return failed("unsupported_job", `invalid team_stage payload: ${issues}`, false);
  }
  const p = parsed.data;
  const who = `${p.runtime} (model ${p.model})`;
  const entry = ctx.runtimes.get(p.runtime);
  if (!entry || entry.kind !== "cli") {
    // The Worker leases a job only to a runner advertising its runtime; a role never moves vendor.
    return failed("unsupported_job", `the ${p.role} runtime ${who} is not available on this runner; no other vendor stands in`, false);
  }
  if (!ctx.apiUrl) return failed("unsupported_job", "this runner was started without the Worker URL its members need", false);
  if (p.employee?.sandbox_enabled === true) {
    // Seed 002's sandbox rule: such an employee never forms a team, so no member runs on the host.
    return failed("unsupported_job", `employee ${p.employee_id} has sandbox_enabled; its role members must not run on the host`, false);
  }

  const roundOf = (signal?: AbortSignal) =>
    checkMemberRound({
      apiUrl: ctx.apiUrl!,
      token: p.member_token,
      expiresAt: p.member_token_expires_at,
      ...(ctx.fetch ? { fetch: ctx.fetch } : {}),
      ...(signal ? { signal } : {}),
    });
  // The round may have ended while the job waited in the inbox: then nothing is spawned for it.
  const before = await roundOf(ctx.signal);
  if (before.state === "over") return failed("round_ended", `${p.role} stage ${p.stage_id} not started: ${before.reason}`, false);
  if (ctx.signal.aborted) return { kind: "aborted" };

  const workDir = await createWorkDir(ctx.home, job.job_id);
  let scaffold: Scaffold | undefined;
  let timer: NodeJS.Timeout | undefined;
  // The janitor never removes a workspace a running stage uses.
  const release = p.workspace ? useIsolatedWorkspace(ctx.home, p.workspace.key) : undefined;
  try {
    let workspaceDir: string | undefined;
    if (p.workspace) {
      try {
        workspaceDir = (await ensureIsolatedWorkspace(ctx.home, p.workspace, employeeWorkspace(ctx.home, p.employee_id))).dir;
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return failed("unsupported_job", `${p.role} stage ${p.stage_id}: isolated workspace ${p.workspace.key} not made: ${why}`, false);
      }
    }
    scaffold = await writeScaffold({
      home: ctx.home,
      taskId: p.task_id,
      round: p.round,
      role: p.role,
      stageId: p.stage_id,
      roundId: p.round_id,
      jobId: job.job_id,
      runtime: p.runtime,
      model: p.model,
      ...(p.effort ? { effort: p.effort } : {}),
      employee: {
        id: p.employee_id,
        ...(employeeConfig(p.employee) ? { config: employeeConfig(p.employee) } : {}),
        identity: p.employee?.soul?.content ?? p.employee?.identity ?? (p.employee?.name ? `You are ${p.employee.name}.` : undefined),
        capabilities: p.employee?.capabilities,
      },
      member: { token: p.member_token, apiUrl: ctx.apiUrl, expiresAt: p.member_token_expires_at },
      ...(ctx.mcpLaunch ? { mcpLaunch: ctx.mcpLaunch } : {}),
      ...(workspaceDir ? { workspaceDir } : {}),
    });
    const check = await checkMemberMcpConfig(scaffold);
    if (!check.ok) return failed(check.code, `${who}: ${check.message}`, false);
    // The soul guard (issue 23): the SOUL the member carries against its fingerprint, and its file unchanged by the run.
    const soulGuard = guardMemberSoul(scaffold.soulPath, scaffold.soul, p.employee?.soul);

    let outputSchemaPath: string | undefined;
    if (p.input.output_schema === "verdict") {
      outputSchemaPath = join(scaffold.dir, "verdict.schema.json");
      await writeFile(outputSchemaPath, `${JSON.stringify(VERDICT_SCHEMA, null, 2)}\n`, { mode: 0o600 });
    }

    // A round that ends under a running member (an operator's stop, a sibling's failure) stops it.
    const stop = new AbortController();
    let roundOver: string | undefined;
    const watchMs = ctx.roundCheckMs ?? DEFAULT_ROUND_CHECK_MS;
    timer = setInterval(() => {
      void roundOf(stop.signal).then((r) => {
        if (r.state !== "over" || stop.signal.aborted) return;
        roundOver = r.reason;
        stop.abort();
      });
    }, watchMs);
    timer.unref();

    const run = await runCli(
      entry,
      memberCliInput(scaffold, {
        prompt: p.input.prompt,
        ...(outputSchemaPath ? { outputSchemaPath } : {}),
        ...(ctx.codexMcpApprovalMode ? { codexMcpApprovalMode: ctx.codexMcpApprovalMode } : {}),
      }),
      {
        logDir: workDir,
        timeoutMs: p.timeout_ms,
        signal: AbortSignal.any([ctx.signal, stop.signal]),
        ...(ctx.env ? { env: ctx.env } : {}),
        ...(ctx.killGraceMs !== undefined ? { killGraceMs: ctx.killGraceMs } : {}),
      },
    );
    clearInterval(timer);
    const verdict = classifyCliRun(entry, run, { timeoutMs: p.timeout_ms, model: p.model });
    if (verdict.kind !== "completed") {
      // The ledger's runtime_used / response_model / provider, from the run itself; a CLI that never
      // started ran nothing, so a spawn failure reports none.
      const ran = run.process.termination === "spawn_failed" ? undefined : ranReport(entry.name, entry.adapter.command, run.stream.model);
      if (roundOver !== undefined && !ctx.signal.aborted) {
        return failed("round_ended", `${p.role} stage ${p.stage_id} stopped: ${roundOver}`, false, ran);
      }
      if (verdict.kind === "aborted") return verdict;
      // The role's runtime and model are named in every failure (seed 002: no failover, and the
      // ledger says which vendor failed how).
      const message = verdict.failure.message.includes(who) ? verdict.failure.message : `${who}: ${verdict.failure.message}`;
      return { kind: "failed", failure: { ...verdict.failure, message, ...(ran ? { ran } : {}) } };
    }

    const calls = await readCallLog(scaffold.callsLogPath);
    const writes = p.stage === "execute" || p.stage === "repair";
    const receipts = writes ? await checkArtifacts(scaffold.workspaceDir, declaredArtifacts(calls)) : undefined;
    const result = buildStageResult({
      runtime: entry.name,
      cli: entry.adapter.command,
      stage: p.stage,
      stream: verdict.stream,
      durationMs: run.process.durationMs,
      effort: run.invocation.effort,
      nativeEvents: run.evidence.nativeEvents,
      calls,
      ...(receipts ? { receipts } : {}),
      canWriteAcrossRounds: scaffold.canWriteAcrossRounds,
      secrets: [p.member_token],
    });
    const guarded: StageResult & { soul_guard?: SoulGuardReport } = soulGuard
      ? { ...result, soul_guard: await soulGuard.checkAfterRun() }
      : result;
    return { kind: "completed", result: guarded };
  } finally {
    clearInterval(timer);
    if (scaffold) await removeScaffold(ctx.home, scaffold.dir).catch(() => undefined);
    release?.();
  }
}

/** The employee's config copy: the object, else the parsed JSON document, else none (a bad one is none). */
function employeeConfig(employee: TeamStageJobPayload["employee"]): Record<string, unknown> | undefined {
  if (employee?.config) return employee.config;
  if (!employee?.config_json) return undefined;
  try {
    const value: unknown = JSON.parse(employee.config_json);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The member's MCP call log; lines that do not parse are skipped (a crash mid-write). */
export async function readCallLog(path: string): Promise<McpCallRecord[]> {
  const text = await readFile(path, "utf8").catch(() => "");
  const out: McpCallRecord[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const value = JSON.parse(line) as McpCallRecord;
      if (value && typeof value.tool === "string" && typeof value.ok === "boolean") out.push(value);
    } catch {
      // skipped
    }
  }
  return out;
}

function failed(code: JobFailure["code"], message: string, retryable: boolean, ran?: RanReport): JobOutcome {
  return { kind: "failed", failure: { code, message, retryable, ...(ran ? { ran } : {}) } };
}
