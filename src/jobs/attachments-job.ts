import * as z from "zod";

/**
 * `attachments_archive` (seed 002, issue 39): when a team goal is accepted, the runner that holds the
 * employee's workspace re-checks each file the accepted round's TaskPackets named and uploads those
 * it may archive into the employee's attachments bucket (`PUT /v1/runner/jobs/:id/attachments`); the
 * job's result says what went in and what was refused, each with a stable reason. Shared by the
 * Worker and the runner, like the other job schemas.
 */

/** The size limit of an archived file: that of every goal artifact's receipt (the runner's RECEIPT_MAX_BYTES, 64 MiB). */
export const ATTACHMENT_MAX_BYTES = 64 * 1024 * 1024;

/** Why a named file was not archived. */
export const ATTACHMENT_REFUSALS = [
  /** Empty, absolute, or with a NUL byte. */
  "invalid_path",
  /** `..` leads out of the workspace. */
  "escapes_workspace",
  /** A symlink (at the path or on the way) leads out of the workspace. */
  "symlink_escape",
  /** The agent's internals (SOUL.md, CLAUDE.md, state/, .claude/, logs/, memory/ …), named or linked to. */
  "internal_path",
  "missing",
  /** A directory, FIFO, socket or device. */
  "not_regular_file",
  /** Over ATTACHMENT_MAX_BYTES. */
  "too_large",
  "unreadable",
  /** The bytes changed between the check and the read. */
  "changed_while_reading",
  /** The Worker refused the upload (the reason is its problem code). */
  "upload_refused",
] as const;
export type AttachmentRefusal = (typeof ATTACHMENT_REFUSALS)[number];

/**
 * The agent's internals at the workspace root, compared case-insensitively (a case-insensitive file
 * system would otherwise serve `soul.md`). Files: the SOUL and each runtime's instruction file, the
 * agent's config and its MCP config (which names its token's home). Directories: everything under them.
 */
const INTERNAL_FILES: ReadonlySet<string> = new Set(["soul.md", "claude.md", "agents.md", "gemini.md", "agent.toml", ".mcp.json"]);
const INTERNAL_DIRS: ReadonlySet<string> = new Set([
  "state",
  "logs",
  "memory",
  ".claude",
  ".codex",
  ".agents",
  ".gemini",
  ".grok",
  ".git",
  ".ephemeral",
]);

/** True for a workspace-relative path (`/`-separated or the platform's) that names the agent's internals. */
export function isInternalPath(rel: string): boolean {
  const parts = rel
    .split(/[\\/]+/)
    .filter((p) => p !== "" && p !== ".")
    .map((p) => p.toLowerCase());
  const first = parts[0];
  if (first === undefined) return false;
  if (parts.length === 1 && INTERNAL_FILES.has(first)) return true;
  return INTERNAL_DIRS.has(first);
}

/** How many paths one archive names at most: every leg of a round, each packet's 32 artifacts. */
export const ATTACHMENT_MAX_PATHS = 256;

const declaredPath = z.string().min(1).max(512);

export const attachmentsArchivePayload = z.object({
  /**
   * The pool it is leased from: that of the round's executors, whose runner worked in the workspace
   * (the Worker's dispatch schema narrows it to RUNTIMES; this file imports nothing, the runner shares it).
   */
  runtime: z.string().min(1).max(32),
  employee_id: z.string().min(1).max(64),
  task_id: z.string().min(1).max(64),
  round_id: z.string().min(1).max(64),
  round: z.number().int().min(1).max(99),
  /** The paths the round's packets named (`artifacts[].path`), as declared, each once. */
  paths: z.array(declaredPath).max(ATTACHMENT_MAX_PATHS),
  max_bytes: z.number().int().min(1).max(ATTACHMENT_MAX_BYTES),
  /**
   * The isolated copy of the workspace the round worked in (an eval arm of the team 2×2,
   * src/jobs/isolated-workspace.ts), when it did: its files are there, not in the employee's own.
   */
  workspace_key: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/)
    .optional(),
});
export type AttachmentsArchivePayload = z.infer<typeof attachmentsArchivePayload>;

/**
 * A workspace-relative path as archived: what the declared one resolved to, `/`-separated, no `.`,
 * `..` or empty segment, no NUL or backslash.
 */
export const archivedPath = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => !p.includes("\0") && !p.includes("\\") && p.split("/").every((s) => s !== "" && s !== "." && s !== ".."), {
    message: "a relative path without empty, `.` or `..` segments",
  });

export const archivedFile = z.strictObject({
  declared: declaredPath,
  path: archivedPath,
  bytes: z.number().int().min(0).max(ATTACHMENT_MAX_BYTES),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ArchivedFile = z.infer<typeof archivedFile>;

export const refusedFile = z.strictObject({
  declared: declaredPath,
  reason: z.enum(ATTACHMENT_REFUSALS),
  bytes: z.number().int().min(0).optional(),
});
export type RefusedFile = z.infer<typeof refusedFile>;

/** What the runner reports (beside the common `text`/`runtime`/`duration_ms`). */
export const attachmentsArchiveResult = z.object({
  archived: z.array(archivedFile).max(ATTACHMENT_MAX_PATHS),
  refused: z.array(refusedFile).max(ATTACHMENT_MAX_PATHS),
});
