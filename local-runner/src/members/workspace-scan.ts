/**
 * The I/O half of an employee turn's workspace evidence: snapshot the workspace (workspace-diff.ts
 * compares two), and check the paths that get a receipt against the disk once (receipts.ts).
 * - Only regular files count; symlinks are never followed (a link to a directory outside the
 *   workspace is not walked), and FIFOs, sockets and devices are not listed.
 * - The CLIs' own state, VCS data and dependencies are skipped (SCAN_SKIP_DIRS), at any depth.
 * - A directory that cannot be read is skipped: it is equally invisible to both scans.
 */
import type { Dirent } from "node:fs";
import { lstat, readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { receiptFor } from "./receipts.ts";
import { PATH_LIMIT, RECEIPT_LIMIT, stageReceipt } from "./stage-result.ts";
import type { StageReceipt } from "./stage-result.ts";
import { diffSnapshots, receiptPaths, SCAN_MAX_FILES, SCAN_SKIP_DIRS, workspaceReport } from "./workspace-diff.ts";
import type { FileStamp, WorkspaceReport, WorkspaceSnapshot } from "./workspace-diff.ts";

/** Depth first, entries in code-unit order (workspace-diff.ts `comparePaths`), up to `maxFiles` files. */
export async function scanWorkspace(workspace: string, options: { maxFiles?: number } = {}): Promise<WorkspaceSnapshot> {
  const maxFiles = options.maxFiles ?? SCAN_MAX_FILES;
  const root = await realpath(workspace);
  const files = new Map<string, FileStamp>();
  // A stack of directories still to read, each with its entries once read (sorted, consumed in order).
  const stack: Array<{ rel: string; entries?: Dirent[] }> = [{ rel: "" }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (!top.entries) {
      const entries = await readdir(join(root, top.rel), { withFileTypes: true }).catch(() => [] as Dirent[]);
      top.entries = entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).reverse();
    }
    const entry = top.entries.pop();
    if (!entry) {
      stack.pop();
      continue;
    }
    const rel = top.rel === "" ? entry.name : `${top.rel}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!SCAN_SKIP_DIRS.has(entry.name)) stack.push({ rel });
      continue;
    }
    if (!entry.isFile()) continue;
    if (files.size >= maxFiles) return { files, partial: true };
    // lstat, not stat: a path swapped for a link since readdir is not followed.
    const info = await lstat(join(root, rel)).catch(() => undefined);
    if (info?.isFile()) files.set(rel, { size: info.size, mtimeMs: info.mtimeMs });
  }
  return { files, partial: false };
}

export interface WorkspaceEvidence {
  artifact_receipts: StageReceipt[];
  workspace: WorkspaceReport;
}

/**
 * The turn's receipts and workspace report: re-check paths first, then the changes, each path checked
 * once against the disk as it is now (a created file hashed, a deleted one `missing`, a re-check path
 * outside the workspace `outside_workspace`).
 */
export async function workspaceEvidence(
  workspace: string,
  before: WorkspaceSnapshot,
  after: WorkspaceSnapshot,
  recheck: readonly string[],
): Promise<WorkspaceEvidence> {
  const root = await realpath(workspace);
  const diff = diffSnapshots(before, after);
  const chosen = receiptPaths(diff.changes, recheck, RECEIPT_LIMIT);
  const receipts: StageReceipt[] = [];
  for (const path of chosen.paths) receipts.push(stageReceipt(await receiptFor(root, { path })));
  return { artifact_receipts: receipts, workspace: workspaceReport(diff, chosen.truncated, PATH_LIMIT) };
}
