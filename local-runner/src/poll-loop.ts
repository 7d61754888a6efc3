/**
 * The runner's main loop: lease jobs while there are free slots, acknowledge each claim, run it with
 * its lease kept alive, report the outcome, then remove its work dir (success) or mark it for the
 * sweep (failure). On shutdown it stops leasing, kills running jobs and fails them as
 * `runner_shutdown` so the server can hand them to another runner straight away.
 */
import { randomUUID } from "node:crypto";
import { acknowledge } from "./ack.ts";
import type { AckPolicy } from "./ack.ts";
import { ApiError, isTransient, StaleLeaseError } from "./api-client.ts";
import type { ApiClient } from "./api-client.ts";
import { createBackoff, sleep } from "./backoff.ts";
import { UnauthorizedError } from "./errors.ts";
import { runJob } from "./jobs/index.ts";
import type { JobContext, JobOutcome } from "./jobs/index.ts";
import { leaseLengthMs, startLeaseKeeper } from "./lease-keeper.ts";
import type { Logger } from "./logger.ts";
import { createScaffoldJanitor } from "./members/scaffold-janitor.ts";
import { withJobScope } from "./process-groups.ts";
import type { JobFailure, LeasedJob } from "./protocol.ts";
import type { RuntimeTable } from "./runtimes/index.ts";
import { createWorkJanitor } from "./work-janitor.ts";
import type { JobEnding } from "./work-janitor.ts";

export interface PollLoopOptions {
  client: ApiClient;
  runtimes: RuntimeTable;
  home: string;
  concurrency: number;
  logger: Logger;
  /** How long the server may hold a lease request (API allows ≤ 25000). */
  waitMs?: number;
  env?: NodeJS.ProcessEnv;
  killGraceMs?: number;
  /** Delays for lease retries after errors. */
  backoff?: { initialMs: number; maxMs: number };
  /** Attempts and first delay for delivering complete/fail. */
  report?: { attempts: number; initialMs: number };
  /** Retries of the ack that confirms a claim before the job runs. */
  ack?: AckPolicy;
  /** How often kept work dirs are swept (the first sweep follows the first lease response). */
  sweepIntervalMs?: number;
  /** Wall clock for work-dir ages; injectable for tests. */
  now?: () => number;
  /** What team stages and employee turns need beyond the basics: the Worker URL their crewplane servers call, and test hooks. */
  members?: Pick<JobContext, "apiUrl" | "fetch" | "roundCheckMs" | "codexMcpApprovalMode" | "mcpLaunch">;
  /** How often leftover member scaffolds are swept (the first sweep runs when the loop starts). */
  scaffoldSweepIntervalMs?: number;
}

export interface PollLoop {
  /** Resolves after a shutdown has drained every job; rejects with UnauthorizedError on 401/403. */
  run(): Promise<void>;
  /** Idempotent; resolves when `run()` has finished. */
  shutdown(reason: string): Promise<void>;
}

type StopReason = "stale_lease" | "shutdown";

interface RunningJob {
  job: LeasedJob;
  controller: AbortController;
  stopReason?: StopReason;
  done: Promise<void>;
}

/** A lease call that comes back empty faster than this is not long-polling; don't hammer the server. */
const MIN_EMPTY_POLL_MS = 1000;
const SHUTDOWN_REPORT = { attempts: 2, initialMs: 500 };

export function createPollLoop(options: PollLoopOptions): PollLoop {
  const { client, runtimes, logger, concurrency } = options;
  const waitMs = options.waitMs ?? 20_000;
  const backoff = createBackoff(options.backoff?.initialMs ?? 1000, options.backoff?.maxMs ?? 15_000);
  const reportPolicy = options.report ?? { attempts: 4, initialMs: 1000 };
  const running = new Map<string, RunningJob>();
  const stop = new AbortController();
  let stopCause = "";
  let wakeLoop: (() => void) | undefined;
  let runPromise: Promise<void> | undefined;
  let fatal: unknown;
  const now = options.now ?? Date.now;
  const janitor = createWorkJanitor({
    home: options.home,
    logger,
    now,
    runningJobIds: () => running.keys(),
    ...(options.sweepIntervalMs !== undefined ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
  });
  const scaffolds = createScaffoldJanitor({
    home: options.home,
    logger,
    now,
    runningJobIds: () => running.keys(),
    ...(options.members?.apiUrl ? { apiUrl: options.members.apiUrl } : {}),
    ...(options.members?.fetch ? { fetch: options.members.fetch } : {}),
    ...(options.scaffoldSweepIntervalMs !== undefined ? { sweepIntervalMs: options.scaffoldSweepIntervalMs } : {}),
  });

  function startJob(job: LeasedJob): void {
    const previous = running.get(job.job_id);
    if (previous) {
      // The server leased this job again, so our older lease on it is void.
      logger.warn("job.re_leased", { job_id: job.job_id, old_lease_id: previous.job.lease_id, lease_id: job.lease_id });
      abortJob(previous, "stale_lease");
    }
    const { ms: leaseMs, skewed } = leaseLengthMs(job.lease_expires_at, Date.now(), job.lease_ms);
    if (skewed)
      logger.warn("lease.clock_skew", {
        job_id: job.job_id,
        lease_expires_at: job.lease_expires_at,
        local_now: new Date().toISOString(),
        using_lease_ms: leaseMs,
      });
    const entry: RunningJob = { job, controller: new AbortController(), done: Promise.resolve() };
    logger.info("job.started", {
      job_id: job.job_id,
      lease_id: job.lease_id,
      kind: job.kind,
      attempt: job.attempt,
      lease_ms: leaseMs,
      runtime: runtimeOf(job),
    });
    entry.done = (async () => {
      // Nothing runs before the claim is confirmed; a job arriving as shutdown begins is handed
      // straight back by the runner_shutdown fail below instead.
      if (!stop.signal.aborted) {
        const decision = await acknowledge(client, job, logger, options.ack, stop.signal);
        if (decision.kind === "fatal") {
          logger.warn("job.dropped", { job_id: job.job_id, lease_id: job.lease_id, reason: "runner token rejected on ack" });
          stopFatally(decision.error);
          return;
        }
        if (decision.kind === "drop") {
          logger.warn("job.dropped", { job_id: job.job_id, lease_id: job.lease_id, reason: `${decision.reason}; not running it` });
          return;
        }
      }
      const keeper = startLeaseKeeper({ client, job, leaseMs, logger, onStale: () => abortJob(entry, "stale_lease") });
      if (stop.signal.aborted) abortJob(entry, "shutdown");
      let outcome: JobOutcome;
      try {
        outcome = await withJobScope(job.job_id, () =>
          runJob(job, {
            runtimes,
            home: options.home,
            signal: entry.controller.signal,
            ...(options.env ? { env: options.env } : {}),
            ...(options.killGraceMs !== undefined ? { killGraceMs: options.killGraceMs } : {}),
            ...options.members,
            ...(client.uploadAttachment
              ? { uploadAttachment: (file) => client.uploadAttachment!(job, file, entry.controller.signal) }
              : {}),
          }),
        );
      } catch (err) {
        logger.error("job.crashed", { job_id: job.job_id, error: err });
        outcome = {
          kind: "failed",
          failure: { code: "spawn_failed", message: `runner could not run the job: ${errorMessage(err)}`, retryable: false },
        };
      } finally {
        keeper.stop();
      }
      const ending = await reportOutcome(entry, outcome);
      // A newer lease of the same job (re-leased to us) owns the dir now; leave it alone.
      const current = running.get(job.job_id);
      if (!current || current === entry) await janitor.jobEnded(job.job_id, ending);
    })().finally(() => {
      if (running.get(job.job_id) === entry) running.delete(job.job_id);
      wakeLoop?.();
    });
    running.set(job.job_id, entry);
  }

  function abortJob(entry: RunningJob, reason: StopReason): void {
    entry.stopReason ??= reason;
    entry.controller.abort();
  }

  async function reportOutcome(entry: RunningJob, outcome: JobOutcome): Promise<JobEnding> {
    const { job } = entry;
    if (entry.stopReason === "stale_lease") {
      logger.warn("job.dropped", {
        job_id: job.job_id,
        lease_id: job.lease_id,
        reason: "stale lease: the job was leased to another runner; not reporting",
      });
      return { succeeded: false, code: "stale_lease" };
    }
    if (outcome.kind === "completed") {
      logger.info("job.succeeded", { job_id: job.job_id, runtime: outcome.result.runtime, duration_ms: outcome.result.duration_ms });
      const sent = await deliver(job, "complete", () => client.complete(job, outcome.result));
      if (sent.ok) return { succeeded: true };
      const refused = resultRefusal(sent.error);
      if (!refused) return { succeeded: false, code: "report_undelivered" };
      // The Worker will never store this result; re-running the (paid) work cannot change that,
      // and leaving it leased would only have it run again after the lease lapses.
      const failure: JobFailure = { code: "result_too_large", message: refused, retryable: false };
      logger.warn("job.failed", { job_id: job.job_id, code: failure.code, retryable: false, message: failure.message });
      await deliver(job, "fail", () => client.fail(job, failure));
      return { succeeded: false, code: failure.code };
    }
    const failure: JobFailure =
      outcome.kind === "failed"
        ? outcome.failure
        : { code: "runner_shutdown", message: `runner shut down (${stopCause || "stopped"}) while the job was running`, retryable: true };
    logger.warn("job.failed", { job_id: job.job_id, code: failure.code, retryable: failure.retryable, message: failure.message });
    await deliver(job, "fail", () => client.fail(job, failure));
    return { succeeded: false, code: failure.code };
  }

  async function deliver(
    job: LeasedJob,
    verb: "complete" | "fail",
    send: () => Promise<void>,
  ): Promise<{ ok: true } | { ok: false; error: unknown }> {
    const policy = stop.signal.aborted ? SHUTDOWN_REPORT : reportPolicy;
    const retry = createBackoff(policy.initialMs, 15_000);
    for (let attempt = 1; ; attempt += 1) {
      try {
        await send();
        logger.info(`job.reported`, { job_id: job.job_id, verb });
        return { ok: true };
      } catch (err) {
        if (err instanceof StaleLeaseError) {
          logger.warn("job.dropped", { job_id: job.job_id, verb, reason: `stale lease on ${verb}: ${err.message}` });
          return { ok: false, error: err };
        }
        // A refused result is answered by the caller with a fail; no point logging it as lost.
        if (verb === "complete" && resultRefusal(err)) return { ok: false, error: err };
        if (!isTransient(err) || attempt >= policy.attempts) {
          logger.error("job.report_undelivered", {
            job_id: job.job_id,
            verb,
            attempts: attempt,
            error: err,
            consequence: "the lease will expire and the server will lease the job again",
          });
          return { ok: false, error: err };
        }
        const delay = retry.next();
        logger.warn("job.report_retry", { job_id: job.job_id, verb, attempt, retry_in_ms: delay, error: err });
        await sleep(delay);
      }
    }
  }

  function waitForFreeSlot(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        wakeLoop = undefined;
        stop.signal.removeEventListener("abort", done);
        resolve();
      };
      wakeLoop = done;
      stop.signal.addEventListener("abort", done, { once: true });
    });
  }

  async function loop(): Promise<void> {
    const advertised = [...runtimes.keys()];
    // Needs no setting from the Worker: leftovers of a runner killed outright go as soon as their round is over.
    scaffolds.start();
    while (!stop.signal.aborted) {
      const free = concurrency - running.size;
      if (free <= 0) {
        await waitForFreeSlot();
        continue;
      }
      const startedAt = Date.now();
      const pollId = randomUUID();
      let jobs: LeasedJob[];
      try {
        const response = await client.lease({ capacity: free, wait_ms: waitMs, runtimes: advertised, poll_id: pollId }, stop.signal);
        jobs = response.jobs;
        janitor.settings(response.settings);
        backoff.reset();
      } catch (err) {
        if (stop.signal.aborted) {
          // The server may already have claimed jobs for the poll we just hung up on; give them back
          // now rather than letting them sit out a lease and burn an attempt.
          await client.cancelPoll(pollId).then(
            () => logger.info("lease.aborted", { poll_id: pollId, note: "in-flight lease request cancelled by shutdown" }),
            (cancelErr: unknown) =>
              logger.warn("lease.cancel_failed", {
                poll_id: pollId,
                error: cancelErr,
                consequence: "jobs claimed by this poll come back after their lease expires",
              }),
          );
          break;
        }
        if (err instanceof UnauthorizedError) {
          logger.error("runner.unauthorized", {
            status: err.status,
            error: err.message,
            hint: "the runner token was rejected; check --token / CREWPLANE_RUNNER_TOKEN",
          });
          stopFatally(err);
          break;
        }
        const delay = backoff.next();
        logger.warn("lease.failed", { error: err, retry_in_ms: delay, transient: isTransient(err) });
        await sleep(delay, stop.signal);
        continue;
      }
      if (jobs.length > free) logger.warn("lease.over_capacity", { requested: free, received: jobs.length });
      // Jobs that arrive as shutdown begins are still started, then immediately failed as runner_shutdown.
      for (const job of jobs) startJob(job);
      const elapsed = Date.now() - startedAt;
      if (jobs.length === 0 && elapsed < MIN_EMPTY_POLL_MS) await sleep(MIN_EMPTY_POLL_MS - elapsed, stop.signal);
    }
    while (running.size > 0) await Promise.allSettled([...running.values()].map((entry) => entry.done));
    await janitor.stop();
    await scaffolds.stop();
    logger.info("runner.stopped", { reason: stopCause });
    if (fatal) throw fatal;
  }

  function stopFatally(err: unknown): void {
    fatal ??= err;
    beginShutdown("unauthorized");
  }

  function beginShutdown(reason: string): void {
    if (stop.signal.aborted) return;
    stopCause = reason;
    logger.info("runner.stopping", { reason, running_jobs: [...running.keys()] });
    stop.abort();
    for (const entry of running.values()) abortJob(entry, "shutdown");
  }

  return {
    run() {
      runPromise ??= loop();
      return runPromise;
    },
    shutdown(reason) {
      beginShutdown(reason);
      return runPromise ? runPromise.catch(() => undefined) : Promise.resolve();
    },
  };
}

function runtimeOf(job: LeasedJob): string | undefined {
  const payload = job.payload as { runtime?: unknown } | null;
  return payload && typeof payload.runtime === "string" ? payload.runtime : undefined;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The message for a result the Worker refused for its size or depth (413/422 on complete), naming
 * the limit as the Worker's problem detail states it; undefined for any other error.
 */
export function resultRefusal(err: unknown): string | undefined {
  if (!(err instanceof ApiError) || (err.status !== 413 && err.status !== 422)) return undefined;
  const detail = err.problem?.detail ?? err.problem?.title ?? err.message;
  return `the Worker refused the result (HTTP ${err.status}${err.problem?.code ? ` ${err.problem.code}` : ""}): ${detail}`;
}
