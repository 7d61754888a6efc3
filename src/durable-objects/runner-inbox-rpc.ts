import * as z from "zod";
import type { JobStatus } from "../db/schema";
import { boundedJobResult, jobError, jobOwner, RUNTIMES } from "../jobs/payloads";
import { dispatchMessage, type DispatchMessage } from "../queues/dispatch-message";
import type { Env } from "../env";

/** The RunnerInbox's RPC inputs (parsed with zod inside the object) and its answers. */

const clockMs = z.number().int();
const runnerId = z.string().min(1).max(64);

export const enqueueInput = z.object({
  message: dispatchMessage,
  maxAttempts: z.number().int().min(1).max(10),
  /** The job is `dead` with `no_runner` when still queued this long after it entered the queue. */
  maxQueueMs: z.number().int().min(1),
  now: clockMs,
});
export type EnqueueInput = z.input<typeof enqueueInput>;

export const enqueueManyInput = z.object({
  messages: z.array(dispatchMessage).max(500),
  maxAttempts: z.number().int().min(1).max(10),
  maxQueueMs: z.number().int().min(1),
  now: clockMs,
});
export type EnqueueManyInput = z.input<typeof enqueueManyInput>;

export const leaseInput = z.object({
  runnerId,
  capacity: z.number().int().min(1).max(100),
  /** Known runtimes only (the Worker reports the others back); may be empty: the poll then just waits. */
  runtimes: z.array(z.enum(RUNTIMES)),
  waitMs: z.number().int().min(0).max(25_000),
  visibilityMs: z.number().int().min(1_000),
  /** How long a claim made after waiting stays provisional before it returns to the queue. */
  ackWindowMs: z.number().int().min(1),
  pollId: z.string().min(1).max(64).optional(),
  now: clockMs,
});
export type LeaseInput = z.input<typeof leaseInput>;

export const cancelPollInput = z.object({ pollId: z.string().min(1).max(64), runnerId, now: clockMs });
export type CancelPollInput = z.input<typeof cancelPollInput>;

const leaseRef = { jobId: z.string().min(1).max(64), leaseId: z.string().min(1).max(64), runnerId, now: clockMs };

export const ackInput = z.object(leaseRef);
export type AckInput = z.input<typeof ackInput>;

export const extendInput = z.object({ ...leaseRef, extendMs: z.number().int().min(1_000).max(3_600_000) });
export type ExtendInput = z.input<typeof extendInput>;

export const completeInput = z.object({ ...leaseRef, result: boundedJobResult });
export type CompleteInput = z.input<typeof completeInput>;

export const failInput = z.object({ ...leaseRef, error: jobError, retryable: z.boolean() });
export type FailInput = z.input<typeof failInput>;

export const revokeInput = z.object({ runnerId, now: clockMs });
export type RevokeInput = z.input<typeof revokeInput>;

/** An owner takes back its jobs no runner has taken yet; they end `dead` with its error. */
export const withdrawInput = z.object({ owner: jobOwner, error: jobError, now: clockMs });
export type WithdrawInput = z.input<typeof withdrawInput>;

/**
 * The hold keys in force, all of them: `company`, `employee:<id>` (paused), `project:<id>` (over
 * budget) hold jobs; `retired:<id>` ends that employee's untaken jobs.
 */
export const syncHoldsInput = z.object({
  keys: z.array(z.string().regex(/^(company|(employee|retired):[a-z0-9][a-z0-9_-]{0,63}|project:[A-Za-z0-9_-]{1,200})$/)).max(10_000),
  now: clockMs,
});
export type SyncHoldsInput = z.input<typeof syncHoldsInput>;

export const withdrawEmployeeInput = z.object({ employeeId: z.string().min(1).max(64), error: jobError, now: clockMs });
export type WithdrawEmployeeInput = z.input<typeof withdrawEmployeeInput>;

export const sweepInput = z.object({ now: clockMs, retainFinishedMs: z.number().int().min(0).optional() });
export type SweepInput = z.input<typeof sweepInput>;

export type LeaseRefOutcome =
  { ok: true; lease_expires_at: string } | { ok: false; reason: "not_found" } | { ok: false; reason: "stale_lease"; status: JobStatus };

export type FinishOutcome =
  | { ok: true; duplicate: boolean; status: JobStatus }
  | { ok: false; reason: "not_found" }
  | { ok: false; reason: "stale_lease" | "result_conflict"; status: JobStatus };

export interface LeasedJob {
  job_id: string;
  lease_id: string;
  lease_expires_at: string;
  /** The lease length granted, so a runner need not compare our (possibly test) clock with its own. */
  lease_ms: number;
  /**
   * The claim was made after the poll waited: the runner must acknowledge it (ack or extend) within
   * `ack_within_ms`, or it returns to the queue without counting the attempt.
   */
  ack_required: boolean;
  ack_within_ms?: number;
  kind: string;
  attempt: number;
  payload: DispatchMessage["payload"];
}

/** What the lazy checks of one call (or the alarm, or the tick) changed. */
export interface Maintenance {
  requeued: number;
  dead: number;
  unacknowledged: number;
  no_runner: number;
}

export interface RunnerActivity {
  runner_id: string;
  last_poll_at: string;
  leased_jobs: number;
}

export interface InboxJobView {
  job_id: string;
  kind: string;
  status: JobStatus;
  /** Queued, and kept back by a hold (a paused employee, a budget over its limit). */
  held?: true;
  attempt: number;
  lease_expires_at: string | null;
  leased_by: string | null;
  acknowledged: boolean;
}

/**
 * The only way to reach an inbox, by name. Which name holds a job (its runtime's pool, a shard of it,
 * or the `fleet` from before pools) is decided in `src/jobs/inbox-pools.ts`; callers go through
 * `src/jobs/inbox-routing.ts`.
 */
export function getRunnerInbox(env: Pick<Env, "RUNNER_INBOX">, name: string) {
  return env.RUNNER_INBOX.getByName(name);
}
