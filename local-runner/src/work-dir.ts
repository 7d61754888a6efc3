/**
 * Per-job work directories, `<home>/work/<job_id>/`: owner-only (0700, files 0600), removed when the
 * job succeeds, kept after a failure for `keep_failed_work_hours` so someone can read what the CLI
 * did, then swept.
 */
import { chmod, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { Logger } from "./logger.ts";

/** The Worker's default when a lease response carries no setting (API: runner.keep_failed_work_hours). */
export const DEFAULT_KEEP_FAILED_WORK_HOURS = 24;
/** Written into a work dir when its job ends without success; the sweep reads the time from it. */
export const ENDED_MARKER = ".crewplane-ended.json";

const HOUR_MS = 3_600_000;

export const workRootFor = (home: string): string => join(home, "work");

/**
 * `<home>/work/<job_id>/`. Job ids are opaque strings from the server, so anything that could
 * climb out of `<home>` (slashes, `..`) is replaced: the runner writes nothing outside its home.
 */
export function workDirFor(home: string, jobId: string): string {
  return join(workRootFor(home), jobDirName(jobId));
}

/** A job id as one safe path segment (also names the job's eval dir, eval/workspace.ts). */
export function jobDirName(jobId: string): string {
  let safe = jobId.replace(/[^A-Za-z0-9._-]/g, "_");
  if (/^\.+$/.test(safe)) safe = safe.replace(/\./g, "_");
  return safe;
}

/** Creates (or re-opens, for a later attempt) the job's dir; both levels end up 0700 whatever the umask. */
export async function createWorkDir(home: string, jobId: string): Promise<string> {
  const root = workRootFor(home);
  const dir = workDirFor(home, jobId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode is filtered by the umask and ignored for dirs that already exist.
  await chmod(root, 0o700);
  await chmod(dir, 0o700);
  return dir;
}

/** The job succeeded: nothing in its dir is needed any more. */
export async function removeWorkDir(home: string, jobId: string): Promise<void> {
  await rm(workDirFor(home, jobId), { recursive: true, force: true });
}

const endedSchema = z.object({ job_id: z.string(), ended_at: z.string(), code: z.string().optional() });

/**
 * Marks a kept dir with when (and why) its job ended, so the sweep measures the keep period from
 * the end of the job rather than from whatever touched the dir last. A job that never used a dir
 * (the offline runtime) gets none.
 */
export async function markWorkDirEnded(home: string, jobId: string, endedAtMs: number, code?: string): Promise<void> {
  const dir = workDirFor(home, jobId);
  try {
    await writeFile(
      join(dir, ENDED_MARKER),
      `${JSON.stringify({ job_id: jobId, ended_at: new Date(endedAtMs).toISOString(), ...(code ? { code } : {}) })}\n`,
      { mode: 0o600 },
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

export interface SweepOptions {
  nowMs: number;
  keepHours: number;
  /** Dirs of jobs running right now are never touched, whatever their age. */
  isRunning: (dirName: string) => boolean;
  logger?: Logger;
  /**
   * Files that hold a secret (an employee turn's identity file, with its token). A job removes its
   * own when it ends; one whose runner was killed outright cannot, so the sweep removes them from
   * every dir of a job that is not running, long before the dir itself goes.
   */
  secretFiles?: readonly string[];
}

export interface SweepReport {
  removed: string[];
  kept: number;
}

/**
 * Removes kept work dirs whose job ended more than `keepHours` ago. A dir without a marker (its
 * runner died mid-job) counts as ended at its last change, the newest mtime in it.
 */
export async function sweepWorkDirs(home: string, options: SweepOptions): Promise<SweepReport> {
  const root = workRootFor(home);
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { removed: [], kept: 0 };
    throw err;
  }
  const cutoff = options.nowMs - options.keepHours * HOUR_MS;
  const removed: string[] = [];
  let kept = 0;
  for (const name of names) {
    if (options.isRunning(name)) {
      kept += 1;
      continue;
    }
    const dir = join(root, name);
    const ended = await endedAt(dir);
    if (ended === undefined || ended > cutoff) {
      kept += 1;
      await removeSecretFiles(dir, options.secretFiles ?? [], options.logger);
      continue;
    }
    await rm(dir, { recursive: true, force: true });
    removed.push(name);
    options.logger?.info("work.swept", {
      dir,
      ended_at: new Date(ended).toISOString(),
      keep_failed_work_hours: options.keepHours,
    });
  }
  return { removed, kept };
}

async function removeSecretFiles(dir: string, names: readonly string[], logger: Logger | undefined): Promise<void> {
  for (const name of names) {
    const before = await stat(dir).catch(() => undefined);
    try {
      await rm(join(dir, name));
    } catch {
      continue; // not there (the usual case)
    }
    // Removing an entry touches the dir, which would date a marker-less dir as ended just now.
    if (before) await utimes(dir, before.atime, before.mtime).catch(() => undefined);
    logger?.info("work.secret_removed", { dir, file: name });
  }
}

async function endedAt(dir: string): Promise<number | undefined> {
  try {
    const marker = endedSchema.safeParse(JSON.parse(await readFile(join(dir, ENDED_MARKER), "utf8")));
    if (marker.success) {
      const ms = Date.parse(marker.data.ended_at);
      if (!Number.isNaN(ms)) return ms;
    }
  } catch {
    // No (readable) marker: fall back to the last change below.
  }
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) return undefined;
    let newest = info.mtimeMs;
    for (const entry of await readdir(dir)) {
      const child = await stat(join(dir, entry)).catch(() => undefined);
      if (child) newest = Math.max(newest, child.mtimeMs);
    }
    return newest;
  } catch {
    return undefined;
  }
}
