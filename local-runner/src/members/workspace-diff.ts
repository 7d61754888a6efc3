/**
 * What an employee's own run changed in its workspace, from two snapshots (before and after the run).
 * Pure: the scan that takes the snapshots is workspace-scan.ts. The diff says what changed in the
 * workspace while the run was on, not who changed it: the Worker runs one turn per employee at a time,
 * and a change by anything else in that window is reported too — an honest over-report, never a guess.
 *
 * A snapshot is relative path → size and mtime. Size or mtime differing is "modified"; a rewrite with
 * the same size inside one mtime tick is not seen (the receipt's hash is what the evaluator checks).
 */
import { posix } from "node:path";

/** Directories never scanned: VCS data, dependencies, and the CLIs' own state. */
export const SCAN_SKIP_DIRS: ReadonlySet<string> = new Set([".git", "node_modules", ".claude", ".codex", ".agents", ".grok", ".gemini"]);
/** A scan stops here and says `partial`. */
export const SCAN_MAX_FILES = 20_000;
/** At most this many changes are listed (the counts stay exact). */
export const CHANGE_LIMIT = 200;

export interface FileStamp {
  size: number;
  mtimeMs: number;
}

export interface WorkspaceSnapshot {
  /** Workspace-relative paths with `/` separators. */
  files: ReadonlyMap<string, FileStamp>;
  /** The scan stopped at its file cap: it covers the tree only up to its last path in scan order. */
  partial: boolean;
}

export type ChangeKind = "created" | "modified" | "deleted";

export interface WorkspaceChange {
  path: string;
  change: ChangeKind;
}

export interface WorkspaceDiff {
  /** Sorted by path (code-unit order). */
  changes: WorkspaceChange[];
  /** Either scan was partial; changes are then reported only where both scans saw the whole tree. */
  partial: boolean;
}

export interface WorkspaceReport {
  scan: "full" | "partial";
  created: number;
  modified: number;
  deleted: number;
  /** More receipts (or changes) than a result carries: the first ones are kept. */
  truncated: boolean;
  changes: WorkspaceChange[];
}

/**
 * The scan's order: depth first, each directory's entries in code-unit order, which is comparing
 * paths component by component. A capped scan has seen every file up to its last path in this order.
 */
export function comparePaths(a: string, b: string): number {
  const x = a.split("/");
  const y = b.split("/");
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

export function diffSnapshots(before: WorkspaceSnapshot, after: WorkspaceSnapshot): WorkspaceDiff {
  // Past the earlier frontier one of the scans saw nothing: a file there would look created or
  // deleted only because the cap fell elsewhere, so that part is left out rather than guessed.
  // undefined: every scan was full; null: a partial scan saw no file at all, so nothing is covered.
  let frontier: string | null | undefined;
  for (const snapshot of [before, after]) {
    if (!snapshot.partial) continue;
    const last = lastPath(snapshot.files);
    if (last === undefined) frontier = null;
    else if (frontier === undefined || (frontier !== null && comparePaths(last, frontier) < 0)) frontier = last;
  }
  const covered = (path: string): boolean => frontier === undefined || (frontier !== null && comparePaths(path, frontier) <= 0);

  const changes: WorkspaceChange[] = [];
  for (const [path, now] of after.files) {
    if (!covered(path)) continue;
    const was = before.files.get(path);
    if (!was) changes.push({ path, change: "created" });
    else if (was.size !== now.size || was.mtimeMs !== now.mtimeMs) changes.push({ path, change: "modified" });
  }
  for (const path of before.files.keys()) {
    if (covered(path) && !after.files.has(path)) changes.push({ path, change: "deleted" });
  }
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { changes, partial: before.partial || after.partial };
}

/**
 * Which paths get a receipt, in order: the re-check paths first (as the Worker sent them, each once),
 * then every change not already among them, by path; at most `limit`, `truncated` when more.
 */
export function receiptPaths(
  changes: readonly WorkspaceChange[],
  recheck: readonly string[],
  limit: number,
): { paths: string[]; truncated: boolean } {
  const seen = new Set<string>();
  const ordered: string[] = [];
  for (const path of [...recheck, ...changes.map((c) => c.path)]) {
    const key = sameFileKey(path);
    if (seen.has(key)) continue;
    seen.add(key);
    ordered.push(path);
  }
  return { paths: ordered.slice(0, limit), truncated: ordered.length > limit };
}

export function workspaceReport(diff: WorkspaceDiff, receiptsTruncated: boolean, pathLimit: number): WorkspaceReport {
  const count = (kind: ChangeKind) => diff.changes.filter((c) => c.change === kind).length;
  const clip = (path: string) => (path.length > pathLimit ? `${path.slice(0, pathLimit - 1)}…` : path);
  return {
    scan: diff.partial ? "partial" : "full",
    created: count("created"),
    modified: count("modified"),
    deleted: count("deleted"),
    truncated: receiptsTruncated || diff.changes.length > CHANGE_LIMIT,
    changes: diff.changes.slice(0, CHANGE_LIMIT).map((c) => ({ path: clip(c.path), change: c.change })),
  };
}

/** `./notes//a.md` and `notes/a.md` name one file; anything else is compared as given. */
function sameFileKey(path: string): string {
  const normal = posix.normalize(path);
  return normal.startsWith("./") ? normal.slice(2) : normal;
}

function lastPath(files: ReadonlyMap<string, FileStamp>): string | undefined {
  let last: string | undefined;
  for (const path of files.keys()) if (last === undefined || comparePaths(path, last) > 0) last = path;
  return last;
}
