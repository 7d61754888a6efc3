import { and, asc, eq, gt } from "drizzle-orm";
import * as z from "zod";
import { getDb, type Db } from "../db/client";
import { soulHeads, soulVersions } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { sha256Hex } from "../lib/crypto";
import { appendEvent } from "../lib/events";
import type { JobEnd } from "../jobs/job-end";

/**
 * The soul guard (seed 003 §5.4; issue 23 item 1): the SOUL's SHA-256 fingerprint lives apart from
 * the content (`soul_heads.sha256`) and apart from every workspace (runs get it in their payload).
 * Two checks report drift as a critical `evolution.soul_drift` event:
 *   - the runner, before each employee run, hashes the SOUL.md it is about to use; a file that is not
 *     what the payload says (edited in the work dir, a stale file, a write during a read-only run) is
 *     re-rendered from the payload and reported in the job's result (`soul_guard`);
 *   - the `soul_guard` tick re-hashes every current SOUL row in D1 against its fingerprint (someone
 *     edited the database).
 * Detection, not correction of D1: the operator decides what the SOUL should be (PUT a new version).
 */

export const SOUL_DRIFT_EVENT = "evolution.soul_drift";

/** What a runner reports about the SOUL it rendered (local-runner/src/members/soul-guard.ts). Loose: a newer runner may add fields. */
export const runnerSoulGuard = z
  .object({
    version: z.number().int().optional(),
    expected_sha256: z.string().max(64),
    status: z.enum(["ok", "drift"]),
    /** `workspace`: the file differed before the run; `payload`: the payload's content did not hash to its fingerprint; `during_run`: a read-only SOUL.md changed under the run. */
    drift: z
      .array(z.enum(["workspace", "payload", "during_run"]))
      .max(3)
      .optional(),
    found_sha256: z.string().max(64).nullish(),
    after_sha256: z.string().max(64).nullish(),
    read_only: z.boolean().optional(),
    rerendered: z.boolean().optional(),
  })
  .loose();

/** Job kinds whose runs render the employee's SOUL: its own turns, and its team members' stages. */
const SOUL_RUN_KINDS: ReadonlySet<string> = new Set(["employee_turn", "team_stage"]);

/**
 * An employee run's end: when its runner reported drift, one critical event (keyed by the job, so
 * an owner call repeated writes it once). Called for every terminal job before its owner's handler;
 * only completed `employee_turn` and `team_stage` jobs carry a report.
 */
export async function recordRunSoulGuard(env: Env, end: JobEnd): Promise<void> {
  if (!SOUL_RUN_KINDS.has(end.kind) || end.status !== "completed") return;
  const parsed = runnerSoulGuard.safeParse(end.result?.soul_guard);
  if (!parsed.success || parsed.data.status !== "drift") return;
  const g = parsed.data;
  const employeeId = typeof end.result?.employee_id === "string" ? end.result.employee_id : await employeeOfJob(env, end.job_id);
  const now = (await loadClock(env)).now();
  const db = getDb(env.DB);
  await db.batch([
    appendEvent(
      db,
      {
        type: SOUL_DRIFT_EVENT,
        subject: employeeId ?? end.job_id,
        payload: {
          severity: "critical",
          detected_by: "runner",
          employee_id: employeeId,
          job_id: end.job_id,
          job_kind: end.kind,
          version: g.version ?? null,
          drift: g.drift ?? [],
          expected_sha256: g.expected_sha256,
          found_sha256: g.found_sha256 ?? null,
          ...(g.after_sha256 ? { after_sha256: g.after_sha256 } : {}),
          rerendered: g.rerendered ?? false,
        },
        dedupeKey: `soul_drift:job:${end.job_id}`,
      },
      now,
    ),
  ]);
}

async function employeeOfJob(env: Env, jobId: string): Promise<string | null> {
  const row = await env.DB.prepare("SELECT json_extract(payload, '$.employee_id') AS employee_id FROM jobs WHERE id = ?")
    .bind(jobId)
    .first<{ employee_id: string | null }>();
  return row?.employee_id ?? null;
}

/** One current SOUL row whose content no longer hashes to its fingerprint. */
export interface DbDrift {
  employee_id: string;
  version: number;
  expected_sha256: string;
  found_sha256: string;
  /** The version row's own hash column, when it disagrees with the head too. */
  row_sha256: string;
}

/** Re-hashes every current SOUL (by employee id, `limit` at a time) and returns those that drifted. */
export async function findDbDrift(db: Db, limit = 1_000): Promise<{ checked: number; drifted: DbDrift[] }> {
  const drifted: DbDrift[] = [];
  let checked = 0;
  let after = "";
  for (;;) {
    const rows = await db
      .select({
        employeeId: soulHeads.employeeId,
        version: soulHeads.version,
        headSha: soulHeads.sha256,
        rowSha: soulVersions.sha256,
        content: soulVersions.content,
      })
      .from(soulHeads)
      .leftJoin(soulVersions, and(eq(soulVersions.employeeId, soulHeads.employeeId), eq(soulVersions.version, soulHeads.version)))
      .where(gt(soulHeads.employeeId, after))
      .orderBy(asc(soulHeads.employeeId))
      .limit(limit)
      .all();
    for (const r of rows) {
      checked++;
      // A head whose version row is gone is drift too: the SOUL the fingerprint vouches for no longer exists.
      const found = r.content === null ? "missing" : await sha256Hex(r.content);
      if (found !== r.headSha || r.rowSha !== r.headSha)
        drifted.push({
          employee_id: r.employeeId,
          version: r.version,
          expected_sha256: r.headSha,
          found_sha256: found,
          row_sha256: r.rowSha ?? "missing",
        });
    }
    if (rows.length < limit) break;
    after = rows[rows.length - 1]!.employeeId;
  }
  return { checked, drifted };
}

/**
 * The `soul_guard` tick: every drifted SOUL gets one critical event per (version, hash found): a
 * drift that persists is not re-announced every minute, a further edit is.
 */
export async function soulGuardTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const { checked, drifted } = await findDbDrift(db);
  for (const d of drifted) {
    await db.batch([
      appendEvent(
        db,
        {
          type: SOUL_DRIFT_EVENT,
          subject: d.employee_id,
          payload: { severity: "critical", detected_by: "tick", ...d },
          dedupeKey: `soul_drift:db:${d.employee_id}:${d.version}:${d.found_sha256}:${d.row_sha256}`,
        },
        now,
      ),
    ]);
  }
  return { checked, drifted: drifted.length };
}
