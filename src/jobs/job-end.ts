import type { JobStatus } from "../db/schema";
import type { Env } from "../env";
import type { JobError, JobOwner } from "./payloads";

/** A job reached a terminal status; what its owner's handler is given. */
export interface JobEnd {
  job_id: string;
  kind: string;
  owner: JobOwner;
  status: Extract<JobStatus, "completed" | "failed" | "dead">;
  attempt: number;
  at: string;
  result?: Record<string, unknown>;
  error?: JobError;
  /** Why it ended that way (`not_retryable`, `lease_expired`, `no_runner`, `dispatch_failed`, …). */
  reason?: string;
}

/**
 * Runs at least once per terminal job, possibly concurrently with a repeat of itself: a handler
 * must be idempotent (a conditional update keyed by the job id). Throwing asks for a retry.
 */
export type OwnerHandler = (env: Env, end: JobEnd) => Promise<void>;

/** Tells a job's owner that the job ended; the composition root (`src/workers/owner-handlers.ts`) has the table. */
export type NotifyOwner = OwnerHandler;

export const TERMINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set(["completed", "failed", "dead"]);

export function isJobEnd(status: JobStatus): status is JobEnd["status"] {
  return TERMINAL_JOB_STATUSES.has(status);
}
