import { and, desc, eq, isNull, ne, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { employees, soulHeads, soulVersions, type SoulSource, type SoulVersionRow } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { insertWhere } from "../lib/guarded-insert";
import { contractSchema, EMPTY_CONTRACT, type Contract } from "./contract";

/**
 * SOUL and CONTRACT as Worker state (issue 23 item 1; seed 003 §4.5–4.6, §5.3–5.4, §12.2). The
 * current SOUL is the version `soul_heads` points at; the head's `sha256` is the soul guard's
 * fingerprint, kept apart from the content row and from every workspace the runner renders into.
 * An employee that has no SOUL yet gets one the first time anything reads it: version 1, `bootstrap`,
 * the identity text its runs have always had (`You are <name>.`).
 */

/** Backups kept besides the current version (seed 003 §5.4 "最大10バージョン"). */
export const MAX_SOUL_BACKUPS = 10;
/** The seed's SOUL.md cap (§4.5 "50KB以下"): an operator's SOUL obeys it too. */
export const MAX_SOUL_BYTES = 50 * 1024;

export interface CurrentSoul {
  version: number;
  content: string;
  /** The fingerprint the soul guard holds (the head's, not recomputed from the content). */
  sha256: string;
}

/** The identity text employee runs had before SOUL versions existed (the runner's own fallback). */
export function bootstrapSoulContent(name: string): string {
  return `You are ${name}.`;
}

/** The current SOUL of an employee (bootstrapped on first read), or null for an unknown employee. */
export async function loadSoul(db: Db, employeeId: string): Promise<CurrentSoul | null> {
  const found = await readHead(db, employeeId);
  if (found) return found;
  const employee = await db.select({ name: employees.name }).from(employees).where(eq(employees.id, employeeId)).get();
  if (!employee) return null;
  await bootstrapSoul(db, employeeId, employee.name, new Date());
  return readHead(db, employeeId);
}

/** The employee's contract (its `contract` config section), EMPTY_CONTRACT when none or when it does not parse. */
export async function loadContract(db: Db, employeeId: string): Promise<Contract> {
  const row = await db.select({ config: employees.config }).from(employees).where(eq(employees.id, employeeId)).get();
  return contractOf(row?.config);
}

/** A config's `contract` section; a corrupt one is no contract (DESIGN principle 3). */
export function contractOf(config: Record<string, unknown> | null | undefined): Contract {
  const own = config?.contract;
  if (own === undefined || own === null) return EMPTY_CONTRACT;
  const parsed = contractSchema.safeParse(own);
  return parsed.success ? parsed.data : EMPTY_CONTRACT;
}

async function readHead(db: Db, employeeId: string): Promise<CurrentSoul | null> {
  const row = await db
    .select({ version: soulHeads.version, sha256: soulHeads.sha256, content: soulVersions.content })
    .from(soulHeads)
    .innerJoin(soulVersions, and(eq(soulVersions.employeeId, soulHeads.employeeId), eq(soulVersions.version, soulHeads.version)))
    .where(eq(soulHeads.employeeId, employeeId))
    .get();
  return row ?? null;
}

/**
 * Writes version 1 and the head, each only if absent: two first reads at once both land on the same
 * row. `time` is the wall clock or the caller's clock; the bootstrap is a record, not a decision.
 */
export async function bootstrapSoul(db: Db, employeeId: string, name: string, time: Date): Promise<void> {
  const content = bootstrapSoulContent(name);
  const hash = await sha256Hex(content);
  const at = time.toISOString();
  await db.batch([
    db
      .insert(soulVersions)
      .values({
        employeeId,
        version: 1,
        content,
        sha256: hash,
        source: "bootstrap",
        reason: "bootstrapped from the employee's identity",
        parentVersion: null,
        createdAt: at,
        createdBy: "system",
      })
      .onConflictDoNothing(),
    db.insert(soulHeads).values({ employeeId, version: 1, sha256: hash, updatedAt: at, updatedBy: "system" }).onConflictDoNothing(),
  ]);
}

/** What a new version needs; the GVU fields only for `gvu`. */
export interface NewSoulVersion {
  employeeId: string;
  content: string;
  sha256: string;
  source: SoulSource;
  reason: string | null;
  actor: string;
  /** The head this version replaces: the write lands only while the head is still this version. */
  parentVersion: number;
  gvu?: {
    roundId: string;
    proposal: string;
    preMetrics: Record<string, unknown>;
    observationEnd: string;
    rollbackDiff: string;
  };
}

/** The head still being `version` (the guard every SOUL write is conditional on). */
export function headIs(employeeId: string, version: number) {
  return sql`EXISTS (SELECT 1 FROM ${soulHeads} WHERE ${soulHeads.employeeId} = ${employeeId} AND ${soulHeads.version} = ${version})`;
}

/**
 * The statements of one SOUL change, in order: the version row first (seed §4.5 step 5, "the version
 * is recorded before SOUL.md moves"), then the head, then the pruning of backups beyond 10. Each is
 * conditional on the head still being `parentVersion`, so a stale writer changes nothing; the caller
 * puts them in one batch with its event (guarded the same way) and reads `rowsChanged` of the head update.
 */
export function soulVersionStatements(db: Db, v: NewSoulVersion & { version: number }, now: Date) {
  const at = now.toISOString();
  const guard = headIs(v.employeeId, v.parentVersion);
  const values = {
    employeeId: v.employeeId,
    version: v.version,
    content: v.content,
    sha256: v.sha256,
    source: v.source,
    reason: v.reason,
    parentVersion: v.parentVersion,
    createdAt: at,
    createdBy: v.actor,
    ...(v.gvu
      ? {
          status: "observing" as const,
          roundId: v.gvu.roundId,
          proposal: v.gvu.proposal,
          preMetrics: v.gvu.preMetrics,
          observationEnd: v.gvu.observationEnd,
          rollbackDiff: v.gvu.rollbackDiff,
        }
      : {}),
  };
  return {
    guard,
    insert: insertWhere(db, soulVersions, values, guard),
    head: db
      .update(soulHeads)
      .set({ version: v.version, sha256: v.sha256, updatedAt: at, updatedBy: v.actor })
      .where(and(eq(soulHeads.employeeId, v.employeeId), eq(soulHeads.version, v.parentVersion))),
    prune: pruneStatement(db, v.employeeId),
  };
}

/**
 * Deletes backups beyond the newest MAX_SOUL_BACKUPS (+ the current one): never the current version,
 * never one still under observation.
 */
export function pruneStatement(db: Db, employeeId: string) {
  // A query builder, not `db.run(sql…)`: drizzle's D1 batch cannot bind a raw statement's parameters (src/db/raw.ts).
  return db
    .delete(soulVersions)
    .where(
      and(
        eq(soulVersions.employeeId, employeeId),
        sql`${soulVersions.version} NOT IN (SELECT version FROM soul_versions WHERE employee_id = ${employeeId} ORDER BY version DESC LIMIT ${MAX_SOUL_BACKUPS + 1})`,
        sql`${soulVersions.version} <> COALESCE((SELECT version FROM soul_heads WHERE employee_id = ${employeeId}), -1)`,
        or(isNull(soulVersions.status), ne(soulVersions.status, "observing")),
      ),
    );
}

/** The versions kept, newest first. */
export function listSoulVersions(db: Db, employeeId: string): Promise<SoulVersionRow[]> {
  return db.select().from(soulVersions).where(eq(soulVersions.employeeId, employeeId)).orderBy(desc(soulVersions.version)).all();
}

export function findSoulVersion(db: Db, employeeId: string, version: number) {
  return db
    .select()
    .from(soulVersions)
    .where(and(eq(soulVersions.employeeId, employeeId), eq(soulVersions.version, version)))
    .get();
}

/** The highest version number ever written for the employee (pruned ones included: numbers are never reused). */
export async function latestVersionNumber(db: Db, employeeId: string): Promise<number> {
  const row = await db
    .select({ v: sql<number>`MAX(${soulVersions.version})` })
    .from(soulVersions)
    .where(eq(soulVersions.employeeId, employeeId))
    .get();
  return row?.v ?? 0;
}
