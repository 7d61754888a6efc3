/**
 * The packet attachments archive (seed 002: "チーム goal が受理されると、TaskPacket に明示的に名前が
 * 挙がったファイルは … 従業員の attachments/ バケットにアーカイブされます"). When a team goal is accepted,
 * every path its accepted round's packets named is re-checked here, against the disk as it is now,
 * whatever made the file (a shell command leaves no native Write event; that does not matter):
 * - it must resolve inside the employee workspace, lexically and through symlinks;
 * - it must be a regular file (not a directory, FIFO, socket or device) within the size limit of
 *   ordinary goal artifacts (RECEIPT_MAX_BYTES, the receipts' 64 MiB);
 * - it must not be the agent's internals (seed 002: "SOUL.md、CLAUDE.md、state/、.claude/、logs/、memory/
 *   などの配下のあらゆるもの … ダウンロード可能な「產物」には決してなりません"): a declared path is a
 *   claim, not an exemption, so a link into them is refused as well.
 * Each refusal carries a stable reason token. The bytes are read once, through a descriptor opened
 * without following links and re-checked, and hashed as read: what is uploaded is what was checked.
 */
import { realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { isInternalPath } from "../../../src/jobs/attachments-job.ts";
import type { AttachmentRefusal } from "../../../src/jobs/attachments-job.ts";
import { RECEIPT_MAX_BYTES, readRegularFile, receiptFor } from "./receipts.ts";

/** The Worker's limit is the receipts' own: one constant for every goal artifact (a test holds them equal). */
export const ATTACHMENT_MAX_BYTES = RECEIPT_MAX_BYTES;

export type CheckedAttachment =
  | { declared: string; ok: true; path: string; bytes: number; sha256: string; content: Buffer }
  | { declared: string; ok: false; reason: AttachmentRefusal; bytes?: number };

/**
 * Checks one named path and, when it may be archived, reads it. `path` in the answer is the file's
 * workspace-relative path after resolving (`/`-separated): two names of one file archive once.
 */
export async function checkAttachment(
  workspace: string,
  declared: string,
  maxBytes: number = ATTACHMENT_MAX_BYTES,
): Promise<CheckedAttachment> {
  const root = await realpath(workspace);
  const refuse = (reason: AttachmentRefusal, bytes?: number): CheckedAttachment => ({
    declared,
    ok: false,
    reason,
    ...(bytes !== undefined ? { bytes } : {}),
  });
  if (declared.length === 0 || declared.includes("\0") || isAbsolute(declared)) return refuse("invalid_path");
  // The name as declared first: `memory/x` is refused whether or not it exists.
  if (isInternalPath(declared)) return refuse("internal_path");

  const receipt = await receiptFor(root, { path: declared });
  switch (receipt.state) {
    case "missing":
      return refuse("missing");
    case "outside_workspace":
      return refuse(receipt.reason);
    case "unverified":
      return refuse(receipt.reason, receipt.bytes);
    case "mismatch": // no declared hash was passed: cannot happen
    case "exists":
      if (receipt.bytes > maxBytes) return refuse("too_large", receipt.bytes);
      break;
  }
  let real: string;
  try {
    real = await realpath(resolve(root, declared));
  } catch {
    return refuse("missing");
  }
  const rel = relative(root, real);
  if (rel === "" || rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) return refuse("symlink_escape");
  // The name it resolves to: a link `notes/x.md → ../SOUL.md` is SOUL.md.
  if (isInternalPath(rel)) return refuse("internal_path");

  const read = await readRegularFile(real, Math.min(maxBytes, ATTACHMENT_MAX_BYTES), true);
  if ("reason" in read) return refuse(read.reason, read.bytes);
  const content = read.content!;
  // Swapped since the receipt hashed it: refuse rather than archive bytes nobody checked.
  if (receipt.state === "exists" && read.sha256 !== receipt.sha256) return refuse("changed_while_reading");
  return { declared, ok: true, path: rel.split(sep).join("/"), bytes: content.length, sha256: read.sha256, content };
}
