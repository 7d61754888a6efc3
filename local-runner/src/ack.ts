/**
 * Acknowledging a claimed job before running it (issue 5 item 2). A long-poll can outlive its
 * runner: a SIGKILLed runner's open poll may still claim a job. The Worker counts such a claim
 * only once the runner acknowledges it, so a live runner acks at once and a dead one never does.
 */
import { ApiError, isRouteMissing, isTransient, StaleLeaseError } from "./api-client.ts";
import type { ApiClient, LeaseRef } from "./api-client.ts";
import { sleep } from "./backoff.ts";
import { UnauthorizedError } from "./errors.ts";
import type { Logger } from "./logger.ts";

export type AckDecision =
  | { kind: "run"; acknowledged: boolean }
  /** Do not run and do not report: the claim is not (or no longer) ours. */
  | { kind: "drop"; reason: string }
  /** The token was rejected: stop the runner. */
  | { kind: "fatal"; error: UnauthorizedError };

export interface AckPolicy {
  attempts: number;
  initialMs: number;
}

/** Short: the Worker's window to acknowledge is about 10 s, and the first extend acknowledges too. */
export const DEFAULT_ACK_POLICY: AckPolicy = { attempts: 3, initialMs: 250 };

/**
 * `signal` is the runner's shutdown: an ack cut short by it counts as "run", so the job goes the
 * shutdown path and is handed back at once with a retryable fail.
 */
export async function acknowledge(
  client: ApiClient,
  job: LeaseRef,
  logger: Logger,
  policy: AckPolicy = DEFAULT_ACK_POLICY,
  signal?: AbortSignal,
): Promise<AckDecision> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await client.ack(job, signal);
      logger.debug("job.acked", { job_id: job.job_id, lease_id: job.lease_id });
      return { kind: "run", acknowledged: true };
    } catch (err) {
      if (signal?.aborted) return { kind: "run", acknowledged: false };
      const decision = classify(err);
      if (decision) {
        if (decision.kind === "run") {
          logger.info("job.ack_unsupported", {
            job_id: job.job_id,
            note: "this Worker has no ack endpoint; running the job as leased",
          });
        }
        return decision;
      }
      if (isTransient(err) && attempt < policy.attempts) {
        const delay = policy.initialMs * 2 ** (attempt - 1);
        logger.warn("job.ack_retry", { job_id: job.job_id, attempt, retry_in_ms: delay, error: err });
        await sleep(delay, signal);
        continue;
      }
      // Unreachable or an answer we do not understand: run it anyway. The lease keeper's first
      // extend acknowledges the claim too, and answers 409 if the Worker has already taken it back.
      logger.warn("job.ack_failed", {
        job_id: job.job_id,
        attempts: attempt,
        error: err,
        consequence: "running it; the first lease extend confirms or revokes the claim",
      });
      return { kind: "run", acknowledged: false };
    }
  }
}

function classify(err: unknown): AckDecision | undefined {
  if (err instanceof UnauthorizedError) return { kind: "fatal", error: err };
  if (err instanceof StaleLeaseError) {
    return { kind: "drop", reason: `the claim was already returned to the queue (${err.message})` };
  }
  if (isRouteMissing(err)) return { kind: "run", acknowledged: false };
  if (err instanceof ApiError && err.status === 404) return { kind: "drop", reason: `the job no longer exists (${err.message})` };
  return undefined;
}
