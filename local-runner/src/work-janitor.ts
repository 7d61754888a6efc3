/**
 * The work-dir lifecycle while the runner runs: a job's dir is removed after a success and marked
 * after anything else; marked (and orphaned) dirs are swept once older than the Worker's
 * keep_failed_work_hours, first after the first lease response (which carries the setting), then
 * every sweep interval. The same sweep removes any `<home>/eval/<job>/` dir of a job not running
 * (an eval_case job removes its own; one left over belongs to a runner that was killed), and every
 * isolated workspace `<home>/eval-workspaces/<key>/` (issue 22, an eval arm's) unused for 7 days:
 * a dedicated age, not keep_failed_work_hours, because an arm's workspace is what its verifier job
 * (queued after the arm's whole round) reads, and what an operator opens to see why the arm failed;
 * one a running job of this runner uses is never removed (eval/isolated-workspace.ts).
 */
import { basename } from "node:path";
import { sweepIsolatedWorkspaces } from "./eval/isolated-workspace.ts";
import { sweepEvalDirs } from "./eval/workspace.ts";
import type { Logger } from "./logger.ts";
import { EMPLOYEE_IDENTITY_FILE } from "./members/employee-mcp.ts";
import type { RunnerSettings } from "./protocol.ts";
import { DEFAULT_KEEP_FAILED_WORK_HOURS, markWorkDirEnded, removeWorkDir, sweepWorkDirs, workDirFor } from "./work-dir.ts";

export const DEFAULT_SWEEP_INTERVAL_MS = 10 * 60_000;

/** How a job ended, for its work dir: `succeeded` only once the Worker took the result. */
export type JobEnding = { succeeded: true } | { succeeded: false; code: string };

export interface WorkJanitor {
  /** Applies the settings of a lease response; the first call starts the sweeps. */
  settings(settings: RunnerSettings | undefined): void;
  jobEnded(jobId: string, ending: JobEnding): Promise<void>;
  stop(): Promise<void>;
}

export function createWorkJanitor(options: {
  home: string;
  logger: Logger;
  now: () => number;
  /** Jobs running right now: their dirs are never swept. */
  runningJobIds: () => Iterable<string>;
  sweepIntervalMs?: number;
}): WorkJanitor {
  const { home, logger, now } = options;
  let keepHours = DEFAULT_KEEP_FAILED_WORK_HOURS;
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | undefined;

  const sweep = (): Promise<void> => {
    sweeping ??= (async () => {
      const busy = new Set([...options.runningJobIds()].map((id) => basename(workDirFor(home, id))));
      try {
        const report = await sweepWorkDirs(home, {
          nowMs: now(),
          keepHours,
          isRunning: (name) => busy.has(name),
          logger,
          secretFiles: [EMPLOYEE_IDENTITY_FILE],
        });
        logger.debug("work.sweep_done", { removed: report.removed.length, kept: report.kept, keep_failed_work_hours: keepHours });
      } catch (err) {
        logger.warn("work.sweep_failed", { error: err });
      }
      try {
        // An eval dir outlives its job only when the runner was killed outright: no keep period.
        await sweepEvalDirs(home, { isRunning: (name) => busy.has(name), logger });
      } catch (err) {
        logger.warn("eval.sweep_failed", { error: err });
      }
      try {
        await sweepIsolatedWorkspaces(home, { nowMs: now(), logger });
      } catch (err) {
        logger.warn("eval_workspace.sweep_failed", { error: err });
      }
    })().finally(() => (sweeping = undefined));
    return sweeping;
  };

  return {
    settings(settings) {
      const hours = settings?.keep_failed_work_hours;
      if (hours !== undefined && hours !== keepHours) {
        logger.info("work.keep_failed_hours", { keep_failed_work_hours: hours, previous: keepHours });
        keepHours = hours;
      }
      if (timer) return;
      timer = setInterval(() => void sweep(), options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
      timer.unref();
      void sweep();
    },
    async jobEnded(jobId, ending) {
      try {
        if (ending.succeeded) await removeWorkDir(home, jobId);
        else await markWorkDirEnded(home, jobId, now(), ending.code);
      } catch (err) {
        logger.warn("work.cleanup_failed", { job_id: jobId, error: err });
      }
    },
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
