/**
 * Isolated workspaces (issue 22, the team 2×2): `<home>/eval-workspaces/<key>/`. One eval arm (a
 * planner × executor pairing of one case) runs its whole team round in one, so the four arms of a
 * case never see each other's files and none of them touches the employee's own workspace; the
 * fixed verifier of the 2×2 (a `utility` job) then reads what the arm left behind.
 *
 * A workspace is created ONCE, by the first stage of its arm that runs: a copy of the employee's
 * workspace `<home>/agents/<employee>/` (empty when there is none) with the payload's `files`
 * written over it, built in a staging dir beside it and renamed into place. Every later stage (and
 * a concurrent one: executors fan out) finds it and uses it as it is, so the planner's and the
 * executors' work survives; the loser of a creation race discards its staging and uses the
 * winner's. The copy holds regular files and directories only: a symlink in the employee workspace
 * would lead the arm back into the employee's files (or anywhere), so it is left out.
 *
 * Every workspace carries a marker file, MARKER (its key and creation time; its mtime is the last
 * use). Besides telling the janitor when the workspace was last used, it keeps the staged dir
 * non-empty, which is what makes the rename safe: a rename onto an existing empty dir would
 * replace it (from under a member already running in it), onto a non-empty one it fails.
 *
 * This file mirrors the Worker's src/jobs/isolated-workspace.ts (the runner never imports the
 * Worker's code).
 */
import { randomBytes } from "node:crypto";
import { cp, lstat, mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { WORKSPACE_KEY, workspacePathProblem } from "../../../src/jobs/isolated-workspace.ts";
import type { Logger } from "../logger.ts";

/** Written into every isolated workspace when it is created; touched at every use. */
export const MARKER = ".crewplane-eval-workspace.json";

export const isolatedWorkspacesRoot = (home: string): string => join(home, "eval-workspaces");

/** `<home>/eval-workspaces/<key>/`; throws on a key the Worker would not have sent. */
export function isolatedWorkspaceDir(home: string, key: string): string {
  if (!WORKSPACE_KEY.test(key)) throw new Error(`invalid isolated workspace key: ${JSON.stringify(key)}`);
  return join(isolatedWorkspacesRoot(home), key);
}

export interface ResolvedWorkspace {
  dir: string;
  /** True for the one call that made it; false when it was already there (or a racing call won). */
  created: boolean;
}

/**
 * The arm's workspace, made on first use (see the file comment). `source` is the employee
 * workspace to copy (absent: the copy starts empty). Throws when a file path is refused or cannot
 * be written (a file where another path needs a directory); nothing is left behind then.
 */
export async function ensureIsolatedWorkspace(
  home: string,
  spec: { key: string; files?: Readonly<Record<string, string>> },
  source: string,
): Promise<ResolvedWorkspace> {
  const dir = isolatedWorkspaceDir(home, spec.key);
  if (await isWorkspace(dir)) {
    await touchWorkspace(dir);
    return { dir, created: false };
  }
  const files = Object.entries(spec.files ?? {});
  for (const [path] of files) {
    const problem = workspacePathProblem(path);
    if (problem) throw new Error(`isolated workspace file ${JSON.stringify(path)} ${problem}`);
  }
  const root = isolatedWorkspacesRoot(home);
  await mkdir(root, { recursive: true, mode: 0o700 });
  // Keys never start with a dot, so a staging dir never takes a key's name.
  const staging = join(root, `.staging-${spec.key}-${randomBytes(6).toString("hex")}`);
  try {
    if (await isDirectory(source)) {
      await cp(source, staging, {
        recursive: true,
        errorOnExist: false,
        // Regular files and directories only (see the file comment); lstat, so a link is seen as one.
        filter: async (from) => {
          const info = await lstat(from).catch(() => undefined);
          return info !== undefined && (info.isDirectory() || info.isFile());
        },
      });
    }
    // No source (or one that is a link, which the filter leaves out): the copy starts empty.
    await mkdir(staging, { recursive: true, mode: 0o700 });
    for (const [path, content] of files) {
      const target = resolve(staging, path);
      if (!inside(staging, target)) throw new Error(`isolated workspace file ${JSON.stringify(path)} escapes the workspace`);
      await mkdir(dirname(target), { recursive: true });
      // Written over a copied file: remove it first, so a read-only copy does not refuse the write.
      await rm(target, { force: true });
      await writeFile(target, content, { mode: 0o644 });
    }
    await writeFile(
      join(staging, MARKER),
      `${JSON.stringify({ key: spec.key, created_at: new Date().toISOString(), copied_from: source })}\n`,
      { mode: 0o600 },
    );
    try {
      await rename(staging, dir);
      return { dir, created: true };
    } catch (err) {
      // Another stage of the arm got there first: its copy is the arm's workspace.
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === "ENOTEMPTY" || code === "EEXIST") && (await isWorkspace(dir))) {
        await rm(staging, { recursive: true, force: true });
        await touchWorkspace(dir);
        return { dir, created: false };
      }
      throw err;
    }
  } catch (err) {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
}

/** The existing workspace for `key`, or undefined (never creates one: a verifier only reads). */
export async function findIsolatedWorkspace(home: string, key: string): Promise<string | undefined> {
  const dir = isolatedWorkspaceDir(home, key);
  if (!(await isWorkspace(dir))) return undefined;
  await touchWorkspace(dir);
  return dir;
}

/** Workspaces jobs of this runner are using right now (dir → how many jobs): the sweep leaves them alone. */
const inUse = new Map<string, number>();

/** Marks the workspace in use until the returned release is called (once). */
export function useIsolatedWorkspace(home: string, key: string): () => void {
  const dir = isolatedWorkspaceDir(home, key);
  inUse.set(dir, (inUse.get(dir) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (inUse.get(dir) ?? 1) - 1;
    if (left > 0) inUse.set(dir, left);
    else inUse.delete(dir);
  };
}

/**
 * How long an isolated workspace is kept after its last use: 7 days, a dedicated age rather than
 * keep_failed_work_hours (24 h by default). An arm's workspace is the only record of what the arm
 * did until its verifier has read it, and the verifier's job may wait in a busy inbox behind other
 * cases' rounds; it is also what an operator opens to see why an arm failed. Every stage and the
 * verifier touch it (MARKER's mtime), so the age counts from the arm's last job, and a workspace a
 * job of this runner is using is never removed whatever its age.
 */
export const ISOLATED_WORKSPACE_KEEP_MS = 7 * 24 * 3_600_000;
/** A staging dir older than this is a crashed creation's leftover (a live one lives seconds). */
export const ISOLATED_STAGING_GRACE_MS = 60 * 60_000;

/** Removes isolated workspaces unused for `keepMs` and old staging leftovers; returns the names removed. */
export async function sweepIsolatedWorkspaces(
  home: string,
  options: { nowMs: number; keepMs?: number; logger?: Logger },
): Promise<string[]> {
  const root = isolatedWorkspacesRoot(home);
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const keepMs = options.keepMs ?? ISOLATED_WORKSPACE_KEEP_MS;
  const removed: string[] = [];
  for (const name of names) {
    const dir = join(root, name);
    const staging = name.startsWith(".staging-");
    if (!staging && (!WORKSPACE_KEY.test(name) || inUse.has(dir))) continue;
    const info = await lstat(dir).catch(() => undefined);
    if (!info) continue;
    const marker = staging ? undefined : await stat(join(dir, MARKER)).catch(() => undefined);
    const lastUsed = (marker ?? info).mtimeMs;
    if (options.nowMs - lastUsed <= (staging ? ISOLATED_STAGING_GRACE_MS : keepMs)) continue;
    // Checked again right before the removal: a job may have started using it during the sweep.
    if (inUse.has(dir)) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(name);
    options.logger?.info("eval_workspace.swept", { dir, last_used_at: new Date(lastUsed).toISOString() });
  }
  return removed;
}

async function isWorkspace(dir: string): Promise<boolean> {
  const info = await lstat(dir).catch(() => undefined);
  return info !== undefined && info.isDirectory();
}

async function isDirectory(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => undefined);
  return info !== undefined && info.isDirectory();
}

async function touchWorkspace(dir: string): Promise<void> {
  const now = new Date();
  await utimes(join(dir, MARKER), now, now).catch(() => undefined);
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
