import * as z from "zod";
import { isolatedWorkspace } from "./isolated-workspace";
import { soulForRun } from "./payloads";
import { EFFORT_LEVELS, MEMBER_STAGE_KINDS, packetIdSchema, TEAM_ROLES, TEAM_RUNTIMES } from "./team-vocabulary";

/**
 * Queue messages are at most 128 KB with metadata (Cloudflare Queues limits); a stage payload stays
 * well below, and the prompt inside it below STAGE_PROMPT_MAX_BYTES (render.ts cuts only the
 * compressible parts to fit).
 */
export const TEAM_STAGE_MAX_BYTES = 110 * 1024;
export const STAGE_PROMPT_MAX_BYTES = 96 * 1024;

const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).byteLength;

/**
 * `team_stage`: run one role member for one stage of a round. The runner builds the member's
 * scaffold from (runtime, model, effort, role), hands it the member token (pinned to this task,
 * round and role; it expires with the round) for `POST /v1/team/handoff`, and reports a
 * `teamStageResult`. No fallback runtime: a spawn that fails fails the stage.
 */
export const teamStagePayload = z
  .object({
    runtime: z.enum(TEAM_RUNTIMES),
    model: z.string().min(1).max(200),
    /** Resolved once from the frozen spec; absent means no effort flag at all. */
    effort: z.enum(EFFORT_LEVELS).optional(),
    /** The runtime's own spelling of it (`--effort high`, `-c model_reasoning_effort="high"`, …). */
    effort_argv: z.array(z.string().min(1).max(64)).max(4).optional(),
    role: z.enum(TEAM_ROLES),
    stage: z.enum(MEMBER_STAGE_KINDS),
    task_id: z.string().min(1).max(64),
    round_id: z.string().min(1).max(64),
    round: z.number().int().min(1).max(99),
    stage_id: z.string().min(1).max(64),
    employee_id: z.string().min(1).max(64),
    member_token: z.string().min(1).max(200),
    member_token_expires_at: z.iso.datetime(),
    input: z.object({
      prompt: z.string().min(1),
      /** The protected-heading marker of this prompt (render.ts): only it opens a protected span. */
      protected_marker: z.string().regex(/^<!-- crewplane-protected:[0-9a-f]{64} -->$/),
      packet_ids: z.array(packetIdSchema).max(100),
      /** Verify stages answer `{"verdict":"PASS"|"FAIL","reasons":[…]}`. */
      output_schema: z.enum(["verdict"]).optional(),
    }),
    /**
     * The employee the member works for, as its runner needs it: its effective tools (the allow-list,
     * or the default set) and deny list decide the executor's tools and codex's sandbox; `config` is
     * the copy the member's agent config starts from (`config_json`). Absent for a task whose employee is unknown.
     */
    employee: z
      .object({
        name: z.string().min(1).max(100),
        capabilities: z.object({
          allowed_tools: z.array(z.string().min(1).max(200)).max(200),
          denied_tools: z.array(z.string().min(1).max(200)).max(200),
        }),
        sandbox_enabled: z.boolean(),
        /**
         * The employee's config as a JSON document. A string, not an object: the payload crosses
         * Durable Object RPC and Hono's typed responses, whose types cannot take a free-form
         * (`unknown` or recursive JSON) value.
         */
        config_json: z
          .string()
          .max(32 * 1024)
          .optional(),
        /** The employee's current SOUL (issue 23): the member's SOUL.md carries it as the identity. */
        soul: soulForRun.optional(),
      })
      .optional(),
    timeout_ms: z
      .number()
      .int()
      .min(1_000)
      .max(3_600_000)
      .default(30 * 60_000),
    /** The round works in this isolated workspace instead of the employee's own (an eval arm's goal). */
    workspace: isolatedWorkspace.optional(),
  })
  .refine((p) => bytes(p.input.prompt) <= STAGE_PROMPT_MAX_BYTES, {
    message: `the stage prompt is at most ${STAGE_PROMPT_MAX_BYTES} bytes`,
    path: ["input", "prompt"],
  })
  .refine((p) => bytes(p) <= TEAM_STAGE_MAX_BYTES, { message: `a team_stage payload is at most ${TEAM_STAGE_MAX_BYTES} bytes` });
export type TeamStagePayload = z.infer<typeof teamStagePayload>;

const count = z.number().int().min(0);
const usage = z
  .object({
    input_tokens: count.optional(),
    output_tokens: count.optional(),
    cache_read_input_tokens: count.optional(),
    cache_creation_input_tokens: count.optional(),
  })
  .loose();

export const ARTIFACT_STATES = ["exists", "missing", "mismatch", "outside_workspace", "unverified", "id_only", "unchecked"] as const;

/**
 * What a runner reports for a finished stage. Every field is optional: what was not measured is
 * absent and stays unknown downstream (no usage → no usage, no tool activity → "window unknown").
 */
export const teamStageResult = z
  .object({
    text: z.string().max(200_000).optional(),
    /** What actually answered (runtime_used / response_model / provider in the ledger). */
    runtime: z.string().min(1).max(64).optional(),
    model: z.string().min(1).max(200).optional(),
    provider: z.string().min(1).max(64).optional(),
    usage: usage.optional(),
    /** Per-leg usage when the stage answered over several calls; summed in the ledger. */
    legs: z
      .array(z.object({ usage: usage.optional() }).loose())
      .max(100)
      .optional(),
    cost_usd: z.number().min(0).optional(),
    verdict: z.enum(["PASS", "FAIL"]).optional(),
    reasons: z.array(z.string().max(2_000)).max(50).optional(),
    evidence: z.object({ native_tool_events: count.optional(), mcp_calls: count.optional() }).loose().optional(),
    tool_activity: z
      .array(z.object({ name: z.string().min(1).max(100), ok: count, err: count }))
      .max(200)
      .optional(),
    artifact_receipts: z
      .array(
        z.object({
          path: z.string().min(1).max(512),
          state: z.enum(ARTIFACT_STATES),
          bytes: count.optional(),
          sha256: z
            .string()
            .regex(/^[0-9a-f]{64}$/)
            .optional(),
          declared_sha256: z
            .string()
            .regex(/^[0-9a-f]{64}$/)
            .optional(),
        }),
      )
      .max(64)
      .optional(),
    /** The receipts' audit rows (a path outside the workspace, a declared hash the bytes do not match). */
    artifact_audits: z
      .array(
        z.object({
          type: z.enum(["team_packet_artifact_refused", "team_packet_artifact_mismatch"]),
          path: z.string().min(1).max(512),
          detail: z.string().max(1_000),
        }),
      )
      .max(64)
      .optional(),
  })
  .loose();
export type TeamStageResult = z.infer<typeof teamStageResult>;
