/**
 * Keeps a job's lease alive while it runs: every third of the lease length, ask for another full
 * lease length, so two extends can fail in a row before the lease runs out.
 */
import type { ApiClient, LeaseRef } from "./api-client.ts";
import { ApiError, StaleLeaseError } from "./api-client.ts";
import type { Logger } from "./logger.ts";

/** A lease that is (nearly) gone on arrival is still extended, just promptly. */
const MIN_LEASE_MS = 1000;
/** The Worker never grants more (its extend_ms and lease_visibility_ms limit). */
const MAX_LEASE_MS = 3_600_000;
/** The Worker's default lease_visibility_ms, used when the server clock is clearly elsewhere. */
const SKEWED_CLOCK_LEASE_MS = 60_000;

/**
 * The lease length as granted, read from lease_expires_at against our clock. A value beyond any
 * lease the Worker grants means the clocks disagree (e.g. the Worker's test clock was advanced);
 * extending on that schedule would let the lease lapse, so a safe default is used instead.
 */
export function leaseLengthMs(leaseExpiresAt: string, now: number = Date.now(), grantedMs?: number): { ms: number; skewed: boolean } {
  // The Worker states the length it granted: no clock comparison needed.
  if (grantedMs !== undefined) return { ms: Math.min(MAX_LEASE_MS, Math.max(MIN_LEASE_MS, grantedMs)), skewed: false };
  const raw = Date.parse(leaseExpiresAt) - now;
  if (raw > MAX_LEASE_MS) return { ms: SKEWED_CLOCK_LEASE_MS, skewed: true };
  return { ms: Math.max(MIN_LEASE_MS, raw), skewed: raw < MIN_LEASE_MS };
}

export interface LeaseKeeper {
  stop(): void;
}

export function startLeaseKeeper(options: {
  client: ApiClient;
  job: LeaseRef;
  leaseMs: number;
  logger: Logger;
  /** Called once when the server says the lease belongs to someone else now. */
  onStale: () => void;
}): LeaseKeeper {
  const { client, job, leaseMs, logger } = options;
  const intervalMs = Math.max(1, Math.floor(leaseMs / 3));
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;

  const schedule = (): void => {
    if (controller.signal.aborted) return;
    timer = setTimeout(tick, intervalMs);
  };

  const tick = async (): Promise<void> => {
    try {
      await client.extend(job, leaseMs, controller.signal);
      logger.debug("lease.extended", { job_id: job.job_id, extend_ms: leaseMs });
    } catch (err) {
      if (controller.signal.aborted) return;
      // 404: the job no longer exists on the server, so the work can never be reported either.
      if (err instanceof StaleLeaseError || (err instanceof ApiError && err.status === 404)) {
        logger.warn("lease.stale", { job_id: job.job_id, lease_id: job.lease_id, detail: err.message });
        controller.abort();
        options.onStale();
        return;
      }
      // Keep trying on the normal schedule; the lease has two more intervals of slack.
      logger.warn("lease.extend_failed", { job_id: job.job_id, error: err });
    }
    schedule();
  };

  schedule();
  return {
    stop() {
      controller.abort();
      clearTimeout(timer);
    },
  };
}
