import type { JobStatus } from "../db/schema";

/**
 * Pure decisions of the lease state machine (API.md "Runner protocol"): `attempt` counts leases
 * taken, so a job whose third lease lapses, or whose third try fails retryably, is dead.
 */
export function afterLeaseExpired(attempt: number, maxAttempts: number): { status: Extract<JobStatus, "queued" | "dead">; reason: string } {
  return attempt >= maxAttempts ? { status: "dead", reason: "lease_expired" } : { status: "queued", reason: "lease_expired" };
}

export function afterFailure(
  attempt: number,
  maxAttempts: number,
  retryable: boolean,
): { status: Extract<JobStatus, "queued" | "failed" | "dead">; reason: string } {
  if (!retryable) return { status: "failed", reason: "not_retryable" };
  return attempt >= maxAttempts ? { status: "dead", reason: "attempts_exhausted" } : { status: "queued", reason: "retryable_failure" };
}

export type LeaseCheck = "ok" | "duplicate" | "stale";

export interface LeaseHolder {
  status: JobStatus;
  leaseId: string | null;
  leasedBy: string | null;
}

/**
 * Whether a completion or failure under `leaseId` by `runnerId` is accepted. A lease belongs to the
 * runner that took it: another runner's token is stale even with the right lease id. A holder whose
 * lease lapsed but whose job nobody has re-leased yet still finishes it: the work is done, so it is
 * not thrown away.
 */
export function checkFinish(job: LeaseHolder, leaseId: string, runnerId: string, terminal: JobStatus): LeaseCheck {
  if (job.leaseId !== leaseId || job.leasedBy !== runnerId) return "stale";
  if (job.status === "leased" || job.status === "queued") return "ok";
  return job.status === terminal ? "duplicate" : "stale";
}
