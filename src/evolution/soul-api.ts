import { createTwoFilesPatch } from "diff";
import { and, eq } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { soulVersions, type SoulVersionRow } from "../db/schema";
import { readSection } from "../lib/config";
import { sha256Hex } from "../lib/crypto";
import { AppError, notFound } from "../lib/errors";
import { appendEventWhere, rowsChanged } from "../lib/guarded-insert";
import { utf8Bytes } from "../jobs/limits";
import { findEmployee } from "../tasks/employees";
import { effectiveEvolution, evolutionConfig } from "./config";
import { soulReadOnly } from "./soul-run";
import {
  findSoulVersion,
  latestVersionNumber,
  listSoulVersions,
  loadSoul,
  MAX_SOUL_BACKUPS,
  MAX_SOUL_BYTES,
  soulVersionStatements,
} from "./soul-store";

/**
 * The operator's side of the SOUL (issue 23 items 1 and 6): read it, replace it under an optimistic
 * version check, and read its kept history with a unified diff between consecutive versions.
 */

// C0 controls other than tab/newline/CR, and bidi overrides: a SOUL is prose a model reads as its persona.
const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u202A-\u202E\u2066-\u2069]/u;

export const soulPutBody = z.strictObject({
  content: z
    .string()
    .refine((c) => c.trim().length > 0, "must not be blank")
    .refine((c) => c.isWellFormed(), "must not contain lone surrogates")
    .refine((c) => !UNSAFE.test(c), "must not contain control or bidi override characters")
    .refine((c) => utf8Bytes(c) <= MAX_SOUL_BYTES, `must be at most ${MAX_SOUL_BYTES} bytes of UTF-8`),
  /** The version the edit was made on: a stale one is 409 (someone else changed the SOUL since). */
  expected_version: z.number().int().min(1),
  reason: z.string().trim().min(1).max(500).optional(),
});
export type SoulPutBody = z.infer<typeof soulPutBody>;

async function requireEmployee(db: Db, employeeId: string) {
  const employee = await findEmployee(db, employeeId);
  if (!employee) throw notFound(`employee ${employeeId}`);
  return employee;
}

/** `GET /v1/employees/:id/soul`: the current SOUL, its version and fingerprint, and whether runs may write it. */
export async function soulView(db: Db, employeeId: string) {
  const employee = await requireEmployee(db, employeeId);
  const soul = await loadSoul(db, employeeId);
  if (!soul) throw notFound(`employee ${employeeId}`);
  const row = await findSoulVersion(db, employeeId, soul.version);
  const cfg = effectiveEvolution(await readSection(db, evolutionConfig), employee.config?.evolution);
  return {
    employee_id: employeeId,
    version: soul.version,
    sha256: soul.sha256,
    bytes: utf8Bytes(soul.content),
    content: soul.content,
    source: row?.source ?? null,
    status: row?.status ?? null,
    created_at: row?.createdAt ?? null,
    created_by: row?.createdBy ?? null,
    // Seed §12.2: read-only to the employee's own runs (and its members) on the AEE path.
    read_only_to_employee: soulReadOnly(cfg),
    path: cfg.legacy_soul_evolution ? ("legacy" as const) : ("aee" as const),
  };
}

function stale(employeeId: string, expected: number, current: number) {
  return new AppError("conflict", `the SOUL of ${employeeId} is at version ${current}, not ${expected}; read it again and retry`, {
    extra: { reason: "stale_soul_version", expected_version: expected, current_version: current },
  });
}

/**
 * `PUT /v1/employees/:id/soul`: a new version by an operator, only while the head is still
 * `expected_version` (one guarded batch: the version row, a GVU version still under observation
 * marked superseded, the event, then the head, then the pruning). The same content again changes nothing.
 */
export async function putSoul(db: Db, employeeId: string, body: SoulPutBody, actor: string, now: Date) {
  await requireEmployee(db, employeeId);
  const current = await loadSoul(db, employeeId);
  if (!current) throw notFound(`employee ${employeeId}`);
  if (current.version !== body.expected_version) throw stale(employeeId, body.expected_version, current.version);
  const hash = await sha256Hex(body.content);
  if (hash === current.sha256) return { ...(await soulView(db, employeeId)), changed: false };
  const version = (await latestVersionNumber(db, employeeId)) + 1;
  const write = soulVersionStatements(
    db,
    {
      employeeId,
      version,
      content: body.content,
      sha256: hash,
      source: "operator",
      reason: body.reason ?? null,
      actor,
      parentVersion: current.version,
    },
    now,
  );
  const at = now.toISOString();
  let head: unknown;
  try {
    [, , , head] = await db.batch([
      write.insert,
      // A GVU version still observed is not judged any more: the operator's text replaced it.
      db
        .update(soulVersions)
        .set({ status: "superseded", decidedAt: at, decision: { verdict: "superseded", by: actor, superseded_by: version } })
        .where(and(eq(soulVersions.employeeId, employeeId), eq(soulVersions.status, "observing"), write.guard)),
      appendEventWhere(
        db,
        {
          type: "evolution.soul_updated",
          subject: employeeId,
          payload: {
            employee_id: employeeId,
            version,
            parent_version: current.version,
            sha256: hash,
            source: "operator",
            by: actor,
            ...(body.reason ? { reason: body.reason } : {}),
          },
        },
        now,
        write.guard,
      ),
      write.head,
      write.prune,
    ]);
  } catch (err) {
    // Another writer took this version number first: the head moved under us.
    if (/UNIQUE|PRIMARY KEY/.test(String(err) + String((err as { cause?: unknown })?.cause ?? ""))) {
      const now2 = await loadSoul(db, employeeId);
      throw stale(employeeId, body.expected_version, now2?.version ?? -1);
    }
    throw err;
  }
  if (rowsChanged(head) === 0) {
    const now2 = await loadSoul(db, employeeId);
    throw stale(employeeId, body.expected_version, now2?.version ?? -1);
  }
  return { ...(await soulView(db, employeeId)), changed: true };
}

/** A unified diff from one SOUL text to another (the `diff` package's patch format), each side labelled. */
export function soulPatch(fromLabel: string, fromText: string, toLabel: string, toText: string): string {
  return createTwoFilesPatch(fromLabel, toLabel, fromText, toText, undefined, undefined, { context: 3 });
}

/** The diff between two versions (from nothing for the first). */
export function soulDiff(from: { version: number; content: string } | null, to: { version: number; content: string }): string {
  return soulPatch(from ? `SOUL.md@v${from.version}` : "/dev/null", from?.content ?? "", `SOUL.md@v${to.version}`, to.content);
}

function versionSummary(row: SoulVersionRow) {
  return {
    version: row.version,
    sha256: row.sha256,
    bytes: utf8Bytes(row.content),
    source: row.source,
    reason: row.reason,
    parent_version: row.parentVersion,
    created_at: row.createdAt,
    created_by: row.createdBy,
    ...(row.status
      ? {
          status: row.status,
          round_id: row.roundId,
          observation_end: row.observationEnd,
          extensions: row.extensions,
          pre_metrics: row.preMetrics,
          post_metrics: row.postMetrics,
          decision: row.decision,
          rollback_diff_encrypted: row.rollbackDiff?.startsWith("aes256gcm:") ?? false,
        }
      : {}),
  };
}

/**
 * `GET /v1/employees/:id/soul/versions`: the kept versions, newest first, each with the unified diff
 * from the kept version before it (`diff_from`); the oldest kept one has none unless it is the first
 * version (a diff from nothing). Older versions were pruned (at most 10 backups are kept).
 */
export async function soulVersionsView(db: Db, employeeId: string) {
  await requireEmployee(db, employeeId);
  const current = await loadSoul(db, employeeId);
  const rows = await listSoulVersions(db, employeeId);
  const versions = rows.map((row, i) => {
    const older = rows[i + 1];
    const base = older ? { version: older.version, content: older.content } : row.version === 1 ? null : undefined;
    return {
      ...versionSummary(row),
      current: row.version === current?.version,
      diff_from: base === undefined ? null : (base?.version ?? 0),
      diff: base === undefined ? null : soulDiff(base, row),
    };
  });
  return { employee_id: employeeId, current_version: current?.version ?? null, max_backups: MAX_SOUL_BACKUPS, versions };
}

/** `GET /v1/employees/:id/soul/versions/:version`: one kept version with its full text. */
export async function soulVersionView(db: Db, employeeId: string, version: number) {
  await requireEmployee(db, employeeId);
  await loadSoul(db, employeeId);
  const row = await findSoulVersion(db, employeeId, version);
  if (!row) throw notFound(`SOUL version ${version} of ${employeeId} (never written, or pruned)`);
  return { employee_id: employeeId, ...versionSummary(row), content: row.content };
}
