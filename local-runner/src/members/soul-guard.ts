/**
 * The runner's half of the soul guard (seed 003 §5.4; issue 23 item 1). An employee run renders its
 * SOUL as `SOUL.md` in the job's work dir (outside the employee workspace, so no workspace write
 * reaches it). The fingerprint it checks against comes from the job payload, never from the
 * workspace or the work dir. Before the run: a SOUL.md already there (a later attempt's work dir, a
 * file someone edited) that does not hash to the fingerprint is drift: it is re-rendered from the
 * payload and reported. A payload whose content does not hash to its own fingerprint (the Worker's
 * stored SOUL was edited) is reported too. On the read-only path the file is 0444 and, after the run,
 * a changed file is drift as well (the CLI's deny rules should have stopped the write).
 */
import { createHash } from "node:crypto";
import { chmod, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const SOUL_FILE = "SOUL.md";

export interface RunSoul {
  version: number;
  content: string;
  sha256: string;
  read_only: boolean;
}

export type DriftKind = "workspace" | "payload" | "during_run";

export interface SoulGuardReport {
  version: number;
  expected_sha256: string;
  status: "ok" | "drift";
  drift?: DriftKind[];
  /** The hash of the file found before the run (absent: there was none). */
  found_sha256?: string;
  /** The hash after the run, when it differs from what was rendered. */
  after_sha256?: string;
  read_only: boolean;
  rerendered: boolean;
}

export const sha256Hex = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

async function hashOf(path: string): Promise<string | undefined> {
  try {
    return sha256Hex(await readFile(path));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export interface RenderedSoul {
  path: string;
  /** What was written (the payload's content): the text a CLI gets as its system prompt. */
  content: string;
  report: SoulGuardReport;
  /** After the run: whether the file still is what was rendered (adds `during_run` drift to the report when not). */
  checkAfterRun(): Promise<SoulGuardReport>;
}

/** Checks what is in `workDir`, (re-)renders SOUL.md from the payload, and returns the guard's report. */
export async function renderRunSoul(workDir: string, soul: RunSoul): Promise<RenderedSoul> {
  const path = join(workDir, SOUL_FILE);
  const drift: DriftKind[] = [];
  const contentHash = sha256Hex(soul.content);
  if (contentHash !== soul.sha256) drift.push("payload");
  const found = await hashOf(path);
  if (found !== undefined && found !== soul.sha256) drift.push("workspace");
  // Always written fresh: an existing file, even a matching one, is never trusted for its mode.
  if (found !== undefined) await rm(path, { force: true });
  await writeFile(path, soul.content, { mode: soul.read_only ? 0o444 : 0o644 });
  // writeFile's mode is filtered by the umask; the guard's mode is not.
  await chmod(path, soul.read_only ? 0o444 : 0o644);
  const report: SoulGuardReport = {
    version: soul.version,
    expected_sha256: soul.sha256,
    status: drift.length > 0 ? "drift" : "ok",
    ...(drift.length > 0 ? { drift } : {}),
    ...(found !== undefined ? { found_sha256: found } : {}),
    read_only: soul.read_only,
    rerendered: found !== undefined,
  };
  return {
    path,
    content: soul.content,
    report,
    async checkAfterRun() {
      const after = await hashOf(path).catch(() => undefined);
      if (after === contentHash || !soul.read_only) return report;
      const kinds = [...(report.drift ?? []), "during_run" as const];
      return { ...report, status: "drift", drift: kinds, after_sha256: after ?? "missing" };
    },
  };
}

/**
 * Claude's deny rules for the rendered SOUL (absolute-path `Edit(//…)` covers every file-editing
 * tool; `Write(//…)` is named too). Codex and grok run sandboxed to the workspace, which the work dir
 * is not part of; the crewplane MCP server has no tool that writes a SOUL.
 */
export function soulDenyRules(path: string): string[] {
  return [`Edit(/${path})`, `Write(/${path})`];
}

/** The SOUL a team stage carries for its member (the Worker's `employee.soul`); older Workers send only the content. */
export interface MemberSoul {
  version?: number;
  content: string;
  sha256?: string;
}

export interface MemberSoulGuard {
  /** Before the run: the payload's content against its fingerprint. */
  report: SoulGuardReport;
  /** After the run: the member's SOUL.md (0444, claude denied edits) still what was rendered. */
  checkAfterRun(): Promise<SoulGuardReport>;
}

/**
 * The guard for a team member's run. The member's SOUL.md is the role contract plus the employee's
 * SOUL, written fresh into a fresh scaffold (nothing earlier to find there), so the checks are the
 * payload's content against its fingerprint and the file unchanged after the run. Undefined for a
 * payload without a fingerprint (nothing to check against).
 */
export function guardMemberSoul(soulPath: string, rendered: string, soul: MemberSoul | undefined): MemberSoulGuard | undefined {
  if (!soul?.sha256) return undefined;
  const payloadDrift = sha256Hex(soul.content) !== soul.sha256;
  const report: SoulGuardReport = {
    version: soul.version ?? 0,
    expected_sha256: soul.sha256,
    status: payloadDrift ? "drift" : "ok",
    ...(payloadDrift ? { drift: ["payload" as const] } : {}),
    read_only: true,
    rerendered: false,
  };
  const renderedHash = sha256Hex(rendered);
  return {
    report,
    async checkAfterRun() {
      const after = await hashOf(soulPath).catch(() => undefined);
      if (after === renderedHash) return report;
      return { ...report, status: "drift", drift: [...(report.drift ?? []), "during_run"], after_sha256: after ?? "missing" };
    },
  };
}
