import * as z from "zod";
import { checkResult, JOB_LIMITS, jsonStringBytes, utf8Bytes } from "./limits";
import { RUNTIMES } from "../db/runtimes";
import { OWNER_KINDS } from "./owner-kinds";
import { observedWorkspace } from "./isolated-workspace";
import { attachmentsArchivePayload } from "./attachments-job";

export { RUNTIMES, type Runtime } from "../db/runtimes";

/** `utility`: run one runtime with one prompt and return its final text. */
export const utilityPayload = z.object({
  runtime: z.enum(RUNTIMES),
  prompt: z
    .string()
    .min(1)
    .refine((p) => jsonStringBytes(p) <= JOB_LIMITS.promptBytes, {
      message: `must be at most ${JOB_LIMITS.promptBytes} bytes (64 KiB) of UTF-8 in its JSON encoding`,
    }),
  model: z.string().min(1).max(200).optional(),
  timeout_ms: z.number().int().min(1_000).max(3_600_000).default(600_000),
  /**
   * A JSON Schema the answer must match, by name (the runner holds the schemas): codex gets it as
   * `--output-schema`; other CLIs only have the prompt's instructions. `acceptance` is the goal
   * loop's evaluator answer, `verdict` a PASS/FAIL verdict.
   */
  output_schema: z.enum(["verdict", "acceptance"]).optional(),
  /**
   * The runner appends these files of an isolated workspace to the prompt (their contents, and an
   * `<artifact_receipts>` block saying which exist) and returns them as `files` (the 2×2's verifier).
   */
  workspace: observedWorkspace.optional(),
  /**
   * Whose work this is, when it is an employee's (a goal round's evaluator): the inboxes hold it while
   * the employee is paused and the cost ledger counts it as the employee's. The runner ignores it.
   */
  employee_id: z.string().min(1).max(64).optional(),
});
export type UtilityPayload = z.infer<typeof utilityPayload>;

const toolName = z.string().min(1).max(200);

/** A SOUL as a run carries it (`employee_turn`, and a team member's `employee`). 50 KB is the seed's SOUL.md cap. */
export const soulForRun = z.object({
  version: z.number().int().min(1),
  content: z
    .string()
    .min(1)
    .refine((c) => utf8Bytes(c) <= 50 * 1024, { message: "must be at most 50 KB of UTF-8" }),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  read_only: z.boolean(),
});
export type SoulForRun = z.infer<typeof soulForRun>;

/**
 * `employee_turn`: run the employee itself (not a team member) on its own runtime and model, in its
 * workspace (`<home>/agents/<employee_id>/`), with its tools, on one prompt: the wake-up message of a
 * solo goal round (seed 002: "単一の起床メッセージ"), later a conversation turn. The runner reports the
 * answer and what changed in the workspace (`artifact_receipts`).
 */
export const employeeTurnPayload = z.object({
  runtime: z.enum(RUNTIMES),
  model: z.string().min(1).max(200),
  /** The employee's effort, when it is one every runtime adapter maps (absent: the vendor's default). */
  effort: z.enum(["low", "medium", "high", "xhigh", "max"]).optional(),
  employee_id: z.string().min(1).max(64),
  employee: z.object({
    name: z.string().min(1).max(100),
    capabilities: z.object({ allowed_tools: z.array(toolName).max(200), denied_tools: z.array(toolName).max(200) }),
    sandbox_enabled: z.boolean(),
  }),
  purpose: z.enum(["goal_round", "conversation"]),
  task_id: z.string().min(1).max(64).optional(),
  /** The conversation a reply belongs to (purpose `conversation`). */
  conversation_id: z.string().min(1).max(64).optional(),
  round_id: z.string().min(1).max(64).optional(),
  round: z.number().int().min(1).max(99).optional(),
  stage_id: z.string().min(1).max(64).optional(),
  prompt: z
    .string()
    .min(1)
    .refine((p) => jsonStringBytes(p) <= JOB_LIMITS.promptBytes, {
      message: `must be at most ${JOB_LIMITS.promptBytes} bytes (64 KiB) of UTF-8 in its JSON encoding`,
    }),
  /**
   * The run's own token (src/jobs/employee-token.ts) for the crewplane MCP server's employee tools
   * (`evolution_status`, `evolution_toggle`). The D1 row keeps `[redacted]`: a run rebuilt from it gets
   * no MCP server.
   */
  employee_token: z.string().min(1).max(200).optional(),
  employee_token_expires_at: z.iso.datetime().optional(),
  /** Workspace-relative paths earlier rounds wrote: the runner reports their state now, too. */
  recheck_paths: z.array(z.string().min(1).max(512)).max(64).optional(),
  /**
   * The employee's current SOUL (issue 23 item 1): the runner renders it as SOUL.md in the job's work
   * dir (0444 when `read_only`) and checks the file against `sha256` before the run. The fingerprint
   * comes from here, never from the workspace (the soul guard).
   */
  soul: soulForRun.optional(),
  timeout_ms: z
    .number()
    .int()
    .min(1_000)
    .max(3_600_000)
    .default(30 * 60_000),
});
export type EmployeeTurnPayload = z.infer<typeof employeeTurnPayload>;

/** Who is told when a job completes, fails or dies (its handler in `src/workers/owner-handlers.ts`). */
export const jobOwner = z.object({
  kind: z.enum(OWNER_KINDS),
  id: z.string().min(1).max(200),
});
export type JobOwner = z.infer<typeof jobOwner>;

export const jobError = z.object({
  code: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, "a lower_snake_case token"),
  message: z.string().max(4_000),
  /**
   * What ran before the job failed, as the run reported it (seed 002: the ledger's runtime_used,
   * response_model and provider come from the execution path). Absent when nothing was spawned.
   */
  ran: z
    .strictObject({
      runtime: z.string().min(1).max(64),
      model: z.string().min(1).max(200).optional(),
      provider: z.string().min(1).max(64).optional(),
    })
    .optional(),
});
export type JobError = z.infer<typeof jobError>;

/** What a runner reports for a finished job; usage appears only when the CLI measured it. */
export const jobResult = z.record(z.string(), z.unknown());

/** A result within JOB_LIMITS (the HTTP layer checks first and answers 413/422; this guards the inbox). */
export const boundedJobResult = jobResult.superRefine((value, ctx) => {
  const check = checkResult(value);
  if (!check.ok) ctx.addIssue({ code: "custom", message: check.detail });
});

/**
 * `eval_case`: run one eval case live (issue 22) on a runtime and model, in a fresh directory the
 * runner seeds with the case's files, and report the outcome its deterministic assertions read: the
 * answer, the CLI's exit status, and each observed path's content (null when absent).
 */
export const evalCasePayload = z.object({
  runtime: z.enum(RUNTIMES),
  model: z.string().min(1).max(200).optional(),
  run_id: z.string().min(1).max(64),
  case_id: z.string().min(1).max(64),
  domain: z.string().min(1).max(64),
  employee_id: z.string().min(1).max(64).optional(),
  tools: z.object({ allowed_tools: z.array(toolName).max(200).optional(), denied_tools: z.array(toolName).max(200).optional() }).optional(),
  prompt: z
    .string()
    .min(1)
    .refine((p) => jsonStringBytes(p) <= JOB_LIMITS.promptBytes, { message: `must be at most ${JOB_LIMITS.promptBytes} bytes` }),
  workspace_files: z.record(z.string().min(1).max(512), z.string().max(65_536)),
  observe_paths: z.array(z.string().min(1).max(512)).max(64),
  timeout_ms: z.number().int().min(1_000).max(3_600_000),
});
export type EvalCasePayload = z.infer<typeof evalCasePayload>;

/** `attachments_archive` as the Worker dispatches it: the shared payload (src/jobs/attachments-job.ts) on a known runtime. */
export const attachmentsArchiveJobPayload = attachmentsArchivePayload.extend({ runtime: z.enum(RUNTIMES) });
