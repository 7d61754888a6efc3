/**
 * The isolated directory of an `eval_case` job, `<home>/eval/<job_id>/` (0700, files 0600): made
 * fresh, seeded with the case's workspace files, read back at the case's observe paths after the
 * run, and removed when the job ends, whatever the ending. Nothing here follows a link out of it:
 * seed paths are checked before anything is written, and an observed path is read only when its
 * parent resolves inside the dir and it is itself a regular file (opened with O_NOFOLLOW).
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, posix, relative, resolve, sep } from "node:path";
import type { Logger } from "../logger.ts";
import { jobDirName } from "../work-dir.ts";

/** An observed file's content is cut to this many bytes (then `truncated_files` names it). */
export const OBSERVE_FILE_BYTES = 64 * 1024;

export const evalRootFor = (home: string): string => join(home, "eval");

/** `<home>/eval/<job_id>/`, the job id made one safe segment as for work dirs. */
export function evalDirFor(home: string, jobId: string): string {
  return join(evalRootFor(home), jobDirName(jobId));
}

/**
 * Why a seed path may not be written (undefined: it may). Pure. A path must be relative and name a
 * file strictly inside the dir: no NUL, no absolute path, no `..` that climbs out, not the dir
 * itself, no trailing slash (a directory is not a file).
 */
export function seedPathProblem(path: string): string | undefined {
  if (path.length === 0) return "is empty";
  if (path.includes("\0")) return "contains a NUL byte";
  if (isAbsolute(path)) return "is absolute";
  if (path.endsWith("/")) return "names a directory";
  const normal = posix.normalize(path);
  if (normal === "." || normal === ".." || normal.startsWith("../")) return "escapes the eval directory";
  return undefined;
}

/** Which attempt owns each eval dir in this runner (see createEvalDir). */
const owners = new Map<string, symbol>();

/** A job's eval dir; `remove` is its one way out. */
export interface EvalDir {
  path: string;
  /** Removes the dir unless a later attempt of the same job has taken it over since. */
  remove(): Promise<void>;
}

/**
 * A fresh, empty dir (one a previous attempt of the same job left behind is replaced). The job may be
 * leased to this runner again while its aborted attempt is still winding down; the new attempt then
 * owns the dir, and the old one's `remove` leaves it alone instead of pulling it from under the run.
 */
export async function createEvalDir(home: string, jobId: string): Promise<EvalDir> {
  const path = evalDirFor(home, jobId);
  const owner = Symbol(jobId);
  owners.set(path, owner);
  const dir: EvalDir = {
    path,
    async remove() {
      if (owners.get(path) !== owner) return;
      owners.delete(path);
      await rm(path, { recursive: true, force: true });
    },
  };
  try {
    await rm(path, { recursive: true, force: true });
    await mkdir(path, { recursive: true, mode: 0o700 });
  } catch (err) {
    await dir.remove().catch(() => undefined);
    throw err;
  }
  return dir;
}

/**
 * Writes the case's files (relative path → UTF-8 content). The caller has checked every path with
 * seedPathProblem; the containment check here is the second line. Throws on a path that cannot be
 * written (a file where another path needs a directory).
 */
export async function seedEvalDir(dir: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    const target = resolve(dir, path);
    if (!inside(dir, target)) throw new Error(`workspace file ${JSON.stringify(path)} escapes the eval directory`);
    await mkdir(dirname(target), { recursive: true, mode: 0o700 });
    await writeFile(target, content, { mode: 0o600 });
  }
}

export interface ObservedFiles {
  /** Each observe path (as given) → its content as UTF-8, or null (absent, unreadable). */
  files: Record<string, string | null>;
  /** Paths whose content was cut to OBSERVE_FILE_BYTES, in observe order. */
  truncated: string[];
  /** Paths that exist but are not a regular file, or that lead out of the dir, in observe order. */
  unreadable: string[];
}

/** Reads every observe path once (duplicates collapse), after the run. */
export async function observeFiles(dir: string, paths: readonly string[]): Promise<ObservedFiles> {
  const root = await realpath(dir);
  // A Map, not an object literal: a path named `__proto__` must stay a plain key.
  const files = new Map<string, string | null>();
  const truncated: string[] = [];
  const unreadable: string[] = [];
  for (const path of paths) {
    if (files.has(path)) continue;
    const seen = await observeFile(root, path);
    files.set(path, seen.kind === "read" ? seen.content : null);
    if (seen.kind === "read" && seen.truncated) truncated.push(path);
    if (seen.kind === "unreadable") unreadable.push(path);
  }
  return { files: Object.fromEntries(files), truncated, unreadable };
}

type Observed = { kind: "absent" } | { kind: "unreadable" } | { kind: "read"; content: string; truncated: boolean };

/** `root` is already a real path. */
async function observeFile(root: string, path: string): Promise<Observed> {
  if (path.includes("\0") || isAbsolute(path)) return { kind: "unreadable" };
  const target = resolve(root, path);
  if (!inside(root, target)) return { kind: "unreadable" };
  let parent: string;
  try {
    parent = await realpath(dirname(target));
  } catch (err) {
    return missing(err) ? { kind: "absent" } : { kind: "unreadable" };
  }
  // A directory on the way that is a link out of the dir: what it points at is not the case's.
  if (parent !== root && !inside(root, parent)) return { kind: "unreadable" };
  let handle;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused as non-regular below).
    handle = await open(join(parent, basename(target)), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return missing(err) ? { kind: "absent" } : { kind: "unreadable" };
  }
  try {
    if (!(await handle.stat()).isFile()) return { kind: "unreadable" };
    const buffer = Buffer.alloc(OBSERVE_FILE_BYTES + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const truncated = filled > OBSERVE_FILE_BYTES;
    return { kind: "read", content: utf8Prefix(buffer.subarray(0, filled), OBSERVE_FILE_BYTES), truncated };
  } catch {
    return { kind: "unreadable" };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * The first `limit` bytes as text, never ending in half a character: a cut inside a multi-byte
 * sequence backs off to its start. Bytes that are not UTF-8 at all read as U+FFFD.
 */
export function utf8Prefix(bytes: Buffer, limit: number): string {
  if (bytes.length <= limit) return bytes.toString("utf8");
  let end = limit;
  // bytes[end] is the first byte left out; a continuation byte there means a character straddles the cut.
  for (let back = 0; back < 3 && end > 0 && (bytes[end]! & 0xc0) === 0x80; back += 1) end -= 1;
  return bytes.subarray(0, end).toString("utf8");
}

export interface EvalSweepOptions {
  /** Dirs of jobs running right now are never touched. */
  isRunning: (dirName: string) => boolean;
  logger?: Logger;
}

/**
 * A job removes its own eval dir on every way out; one still here when its job is not running was
 * left by a runner that was killed outright, so it goes (`eval.swept`). Nothing in it is evidence
 * the Worker could use: the case's files are in its payload, and the run's output, when kept, is in
 * the job's work dir.
 */
export async function sweepEvalDirs(home: string, options: EvalSweepOptions): Promise<string[]> {
  const root = evalRootFor(home);
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if (missing(err)) return [];
    throw err;
  }
  const removed: string[] = [];
  for (const name of names) {
    if (options.isRunning(name)) continue;
    const dir = join(root, name);
    const info = await lstat(dir).catch(() => undefined);
    if (!info) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(name);
    options.logger?.info("eval.swept", { dir });
  }
  return removed;
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

function missing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}
