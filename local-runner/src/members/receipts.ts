/**
 * Artifact receipts (seed 002 "成果物パスはワークスペースに照らして検査される"; issue 11 item 5).
 * Each declared `artifacts[].path` is resolved against the employee workspace ONCE, here:
 * - outside the workspace, lexically or through a symlink → `outside_workspace` + an audit;
 * - not a regular file, or over 64 MiB → `unverified`: stat comes before any read, and the file is
 *   opened non-blocking and re-checked on the descriptor, so a FIFO never blocks and a huge file is
 *   never hashed;
 * - otherwise its sha256: `exists`, `missing`, or `mismatch` (declared hash kept, flagged, audited).
 * An undeclared hash is filled in from the bytes. Renderers get these results; they never touch disk.
 */
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readlink, realpath, stat } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

export const RECEIPT_MAX_BYTES = 64 * 1024 * 1024;

export interface DeclaredArtifact {
  path: string;
  sha256?: string | undefined;
  bytes?: number | undefined;
}

export type OutsideReason = "escapes_workspace" | "symlink_escape";
export type UnverifiedReason = "not_regular_file" | "too_large" | "unreadable" | "invalid_path";

export type Receipt =
  | { path: string; state: "exists"; bytes: number; sha256: string; filled: boolean }
  | { path: string; state: "missing" }
  | { path: string; state: "mismatch"; bytes: number; sha256: string; declared_sha256?: string; declared_bytes?: number }
  | { path: string; state: "outside_workspace"; reason: OutsideReason }
  | { path: string; state: "unverified"; reason: UnverifiedReason; bytes?: number };

export interface ReceiptAudit {
  type: "team_packet_artifact_refused" | "team_packet_artifact_mismatch";
  path: string;
  detail: string;
}

export interface ReceiptCheck {
  receipts: Receipt[];
  audits: ReceiptAudit[];
  /** The declarations with undeclared hashes filled in; a wrong declared hash is kept as declared. */
  artifacts: DeclaredArtifact[];
}

export async function checkArtifacts(workspace: string, artifacts: readonly DeclaredArtifact[]): Promise<ReceiptCheck> {
  const root = await realpath(workspace);
  const receipts: Receipt[] = [];
  const audits: ReceiptAudit[] = [];
  const updated: DeclaredArtifact[] = [];
  for (const artifact of artifacts) {
    const receipt = await receiptFor(root, artifact);
    receipts.push(receipt);
    if (receipt.state === "outside_workspace") {
      audits.push({
        type: "team_packet_artifact_refused",
        path: artifact.path,
        detail: `resolves outside the employee workspace (${receipt.reason})`,
      });
    } else if (receipt.state === "mismatch") {
      audits.push({ type: "team_packet_artifact_mismatch", path: artifact.path, detail: describeMismatch(receipt) });
    }
    updated.push(receipt.state === "exists" && receipt.filled ? { ...artifact, sha256: receipt.sha256 } : { ...artifact });
  }
  return { receipts, audits, artifacts: updated };
}

export async function receiptFor(root: string, artifact: DeclaredArtifact): Promise<Receipt> {
  const path = artifact.path;
  if (path.length === 0 || path.includes("\0")) return { path, state: "unverified", reason: "invalid_path" };
  const target = resolve(root, path);
  if (!inside(root, target)) return { path, state: "outside_workspace", reason: "escapes_workspace" };

  let real: string;
  try {
    real = await realpath(target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") return { path, state: "unverified", reason: "unreadable" };
    // Not there (or a dangling link): still refuse a path that would land outside once created.
    return (await escapesWhenMissing(root, target))
      ? { path, state: "outside_workspace", reason: "symlink_escape" }
      : { path, state: "missing" };
  }
  if (!inside(root, real)) return { path, state: "outside_workspace", reason: "symlink_escape" };

  // Stat before read: a FIFO or device is never opened for reading, a huge file never hashed.
  const info = await stat(real).catch(() => undefined);
  if (!info) return { path, state: "missing" };
  if (!info.isFile()) return { path, state: "unverified", reason: "not_regular_file" };
  if (info.size > RECEIPT_MAX_BYTES) return { path, state: "unverified", reason: "too_large", bytes: info.size };

  const hashed = await readRegularFile(real, RECEIPT_MAX_BYTES, false);
  if ("reason" in hashed)
    return { path, state: "unverified", reason: hashed.reason, ...(hashed.bytes !== undefined ? { bytes: hashed.bytes } : {}) };
  const declaredSha = artifact.sha256?.trim().toLowerCase();
  const shaWrong = declaredSha !== undefined && declaredSha !== "" && declaredSha !== hashed.sha256;
  const bytesWrong = artifact.bytes !== undefined && artifact.bytes !== hashed.bytes;
  if (shaWrong || bytesWrong) {
    return {
      path,
      state: "mismatch",
      bytes: hashed.bytes,
      sha256: hashed.sha256,
      ...(shaWrong ? { declared_sha256: artifact.sha256! } : {}),
      ...(bytesWrong ? { declared_bytes: artifact.bytes! } : {}),
    };
  }
  return { path, state: "exists", bytes: hashed.bytes, sha256: hashed.sha256, filled: declaredSha === undefined || declaredSha === "" };
}

/** One line per declaration, as the verifier and the audit see it (seed 002 `<artifact_receipts>`). */
export function renderReceipt(receipt: Receipt): string {
  switch (receipt.state) {
    case "exists":
      return `${receipt.path} ${receipt.bytes}B sha256=${short(receipt.sha256)} exists`;
    case "missing":
      return `${receipt.path} missing`;
    case "mismatch":
      return `${receipt.path} ${receipt.bytes}B sha256=${short(receipt.sha256)} mismatch (${describeMismatch(receipt)})`;
    case "outside_workspace":
      return `${receipt.path} outside_workspace`;
    case "unverified":
      return `${receipt.path} unverified (${receipt.reason}${receipt.bytes !== undefined ? `, ${receipt.bytes}B` : ""})`;
  }
}

function describeMismatch(receipt: Extract<Receipt, { state: "mismatch" }>): string {
  const parts: string[] = [];
  if (receipt.declared_sha256 !== undefined) parts.push(`declared ${short(receipt.declared_sha256)}`);
  if (receipt.declared_bytes !== undefined) parts.push(`declared ${receipt.declared_bytes}B`);
  return parts.join(", ");
}

function short(hash: string): string {
  return hash.length > 12 ? `${hash.slice(0, 12)}…` : hash;
}

function inside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * For a path that does not exist yet: follow a dangling symlink at the path itself, else resolve
 * the nearest existing ancestor; either landing outside the workspace is an escape.
 */
async function escapesWhenMissing(root: string, target: string): Promise<boolean> {
  const link = await lstat(target).catch(() => undefined);
  if (link?.isSymbolicLink()) {
    const pointsTo = resolve(dirname(target), await readlink(target));
    if (!inside(root, pointsTo)) return true;
  }
  let dir = dirname(target);
  for (;;) {
    const real = await realpath(dir).catch(() => undefined);
    if (real !== undefined) return !inside(root, real);
    const parent = dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

/** Why a path that passed its path checks still cannot be read as one regular file within a cap. */
export type RegularFileRefusal = { reason: "unreadable" | "not_regular_file" | "too_large"; bytes?: number };

/**
 * Opens without blocking or following links, re-checks on the descriptor (the path may have been
 * swapped between stat and open), and hashes at most `maxBytes`, keeping the bytes when asked
 * (the attachments archive uploads them; a receipt only needs the digest).
 */
export async function readRegularFile(
  real: string,
  maxBytes: number,
  keep: boolean,
): Promise<{ sha256: string; bytes: number; content?: Buffer } | RegularFileRefusal> {
  let handle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return { reason: "unreadable" };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { reason: "not_regular_file" };
    if (info.size > maxBytes) return { reason: "too_large", bytes: info.size };
    const hash = createHash("sha256");
    const chunks: Buffer[] = [];
    let buffer = Buffer.alloc(1024 * 1024);
    let bytes = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      bytes += bytesRead;
      if (bytes > maxBytes) return { reason: "too_large", bytes };
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      if (keep) {
        chunks.push(chunk);
        buffer = Buffer.alloc(buffer.length);
      }
    }
    return { sha256: hash.digest("hex"), bytes, ...(keep ? { content: Buffer.concat(chunks, bytes) } : {}) };
  } catch {
    return { reason: "unreadable" };
  } finally {
    await handle.close();
  }
}
