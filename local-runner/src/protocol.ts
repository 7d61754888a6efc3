/**
 * The runner side of the Worker's runner protocol (API.md "Runner protocol"), as zod schemas.
 * Everything the Worker sends is parsed here before the runner acts on it.
 */
import { z } from "zod";

const isoTimestamp = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: "expected an ISO-8601 timestamp" });

/**
 * Only the fields needed to report back are required at this level: a job whose kind or payload
 * this runner does not understand must still be failed as `unsupported_job`, not silently dropped.
 */
export const leasedJobSchema = z.object({
  job_id: z.string().min(1),
  lease_id: z.string().min(1),
  lease_expires_at: isoTimestamp,
  /** The lease length the Worker granted; preferred over lease_expires_at, which is in the Worker's clock. */
  lease_ms: z.number().int().positive().optional(),
  kind: z.string(),
  attempt: z.number().int().nonnegative(),
  payload: z.unknown(),
});
export type LeasedJob = z.infer<typeof leasedJobSchema>;

/**
 * Runner-relevant settings the Worker sends with every lease response. Each field is optional so
 * an older Worker (or a newer one that dropped a field) still parses; the runner then uses its default.
 */
export const runnerSettingsSchema = z
  .object({
    keep_failed_work_hours: z.number().nonnegative().optional(),
  })
  .loose();
export type RunnerSettings = z.infer<typeof runnerSettingsSchema>;

export const leaseResponseSchema = z.object({ jobs: z.array(leasedJobSchema), settings: runnerSettingsSchema.optional() });
export type LeaseResponse = z.infer<typeof leaseResponseSchema>;

export const problemSchema = z
  .object({
    type: z.string().optional(),
    title: z.string().optional(),
    status: z.number().optional(),
    detail: z.string().optional(),
    code: z.string().optional(),
    errors: z.array(z.object({ path: z.unknown().optional(), message: z.string().optional() }).loose()).optional(),
  })
  .loose();
export type Problem = z.infer<typeof problemSchema>;

export interface LeaseRequest {
  capacity: number;
  wait_ms: number;
  runtimes: string[];
  /** Names the long-poll so it can be cancelled if we abandon it (shutdown). */
  poll_id: string;
}

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** Unknown usage or cost is left out, never reported as 0. */
export interface JobResult {
  text: string;
  runtime: string;
  model?: string;
  session_id?: string;
  duration_ms: number;
  usage?: Usage;
  cost_usd?: number;
  /** The CLI's final event had no text; the answer is its last message from the stream. */
  message_recovered_from_stream?: true;
}

export const FAILURE_CODES = [
  "not_logged_in",
  "cli_error",
  "max_turns",
  "timeout",
  "incomplete_output",
  "spawn_failed",
  "unsupported_job",
  "runner_shutdown",
  /** The Worker refused the result (413/422: too large or too deep); re-running cannot change that. */
  "result_too_large",
  /** An MCP server the member needs did not start (claude's init event says "failed"). */
  "mcp_server_failed",
  /** The CLI could not reach its vendor's API (codex retries forever; the timeout ends it). */
  "network_error",
  /**
   * The vendor's API answered that it cannot serve now (overloaded 529, rate limited 429, a 5xx), and
   * the CLI's own retries ran out: worth another attempt later, not the member's doing.
   */
  "api_unavailable",
  /** A member scaffold without its own MCP config: refused rather than run with someone else's identity. */
  "member_mcp_config_missing",
  /** The team round ended (any way) before or while its member ran: nothing more to do for it. */
  "round_ended",
  /**
   * An employee with sandbox_enabled asked to run on a runtime this runner cannot sandbox (only
   * codex brings its own): re-running on the same runtime cannot change that.
   */
  "sandbox_unavailable",
  /**
   * A utility job names an isolated workspace (issue 22, the 2×2's verifier) that is not on this
   * runner: its arm never ran here, or the janitor removed it. Re-running cannot bring it back.
   */
  "workspace_missing",
  /** An attachment upload did not reach the Worker (or the lease was lost): worth another attempt. */
  "upload_failed",
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

/** The Worker stores at most this much of a failure message. */
export const MAX_FAILURE_MESSAGE = 4000;

export interface JobFailure {
  code: FailureCode;
  message: string;
  retryable: boolean;
  /** What ran before the failure, as the run saw it; absent when nothing was spawned. */
  ran?: RanReport;
}

/** The runtime that ran, and the model and provider when the run named them (never guessed). */
export interface RanReport {
  runtime: string;
  model?: string;
  provider?: string;
}
