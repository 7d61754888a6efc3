import { and, asc, eq, inArray, lt, lte, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getDb, type Db } from "../db/client";
import { gvuRounds, jobs, soulVersions, type SoulVersionRow } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { appendEventWhere, rowsChanged } from "../lib/guarded-insert";
import type { JobEnd } from "../jobs/job-end";
import { resolveSoulApprovals, rollbackContext } from "./gvu-apply";
import { metricsOf, versionMetrics } from "./gvu-metrics";
import { advanceRound, startGvuRounds } from "./gvu-round";
import { consolidateSouls } from "./soul-consolidation-run";
import { resolveConsolidationApprovals } from "./soul-consolidation-apply";
import { observationVerdict } from "./observation";
import { readRollbackDiff } from "./soul-crypto";
import { findSoulVersion, latestVersionNumber, loadContract, loadSoul, soulVersionStatements } from "./soul-store";
import { sha256Hex } from "../lib/crypto";

/**
 * The legacy observation window (seed 003 §4.5, with the v3 rule that too few conversations never
 * confirm): once a GVU version's `observation_end` has passed, its metrics since it applied are
 * compared with those before (`observationVerdict`): confirm, roll back, or extend by 12 h.
 * A rollback restores the SOUL before the version as a new version (`source: rollback`) from the
 * version's rollback diff, decrypted with EVOLUTION_KEY; a diff that cannot be read (no key, a wrong
 * key, a damaged value) falls back to the parent version's row when it is still kept, and says so.
 */
export async function observeSoulVersions(env: Env, now: Date, limit = 50) {
  const db = getDb(env.DB);
  const due = await db
    .select()
    .from(soulVersions)
    .where(and(eq(soulVersions.status, "observing"), lte(soulVersions.observationEnd, now.toISOString())))
    .orderBy(asc(soulVersions.observationEnd))
    .limit(limit)
    .all();
  const out: Array<{ employee_id: string; version: number; verdict: string; reason?: string }> = [];
  for (const row of due) out.push(await judgeVersion(env, db, row, now));
  return out;
}

const observingSql = (row: SoulVersionRow) => sql`EXISTS (SELECT 1 FROM ${soulVersions} WHERE ${stillObserving(row)})`;

const stillObserving = (row: SoulVersionRow) =>
  and(
    eq(soulVersions.employeeId, row.employeeId),
    eq(soulVersions.version, row.version),
    eq(soulVersions.status, "observing"),
    eq(soulVersions.extensions, row.extensions),
  );

async function judgeVersion(env: Env, db: Db, row: SoulVersionRow, now: Date) {
  const base = { employee_id: row.employeeId, version: row.version };
  const head = await loadSoul(db, row.employeeId);
  const at = now.toISOString();
  if (!head || head.version !== row.version) {
    // Not current any more (replaced outside the operator's PUT): nothing to judge or restore.
    await db
      .update(soulVersions)
      .set({ status: "superseded", decidedAt: at, decision: { verdict: "superseded", current_version: head?.version ?? null } })
      .where(stillObserving(row));
    return { ...base, verdict: "superseded" };
  }
  const contract = await loadContract(db, row.employeeId);
  const pre = metricsOf(row.preMetrics) ?? {
    positive_feedback_ratio: null,
    avg_prediction_error: null,
    user_correction_rate: null,
    contract_violations: 0,
    conversations_count: 0,
  };
  const post = await versionMetrics(db, row.employeeId, contract, new Date(row.createdAt), now);
  const verdict = observationVerdict({ pre, post, now, extensions: row.extensions });
  // Each event lands only with its change (the version still observed as read).
  const event = (type: string, payload: Record<string, unknown>) =>
    appendEventWhere(
      db,
      {
        type,
        subject: row.employeeId,
        payload: { agent_id: row.employeeId, version: row.version, round_id: row.roundId, pre, post, ...payload },
      },
      now,
      observingSql(row),
    );

  if (verdict.verdict === "extend") {
    await db.batch([
      event("evolution.soul_observation_extended", {
        reason: verdict.reason,
        hours: verdict.hours,
        observation_end: verdict.observation_end,
        extensions: row.extensions + 1,
      }),
      db
        .update(soulVersions)
        .set({
          observationEnd: verdict.observation_end,
          extensions: row.extensions + 1,
          postMetrics: post as unknown as Record<string, unknown>,
        })
        .where(stillObserving(row)),
    ]);
    return { ...base, verdict: "extend", reason: verdict.reason };
  }
  if (verdict.verdict === "confirm") {
    await db.batch([
      event("evolution.soul_confirmed", { reason: verdict.reason }),
      db
        .update(soulVersions)
        .set({
          status: "confirmed",
          postMetrics: post as unknown as Record<string, unknown>,
          decidedAt: at,
          decision: { verdict: "confirm", reason: verdict.reason },
        })
        .where(stillObserving(row)),
    ]);
    return { ...base, verdict: "confirm" };
  }
  return rollBack(env, db, row, { reason: verdict.reason, detail: verdict.detail, post }, now);
}

async function rollBack(env: Env, db: Db, row: SoulVersionRow, why: { reason: string; detail: string; post: unknown }, now: Date) {
  const base = { employee_id: row.employeeId, version: row.version };
  const stored = row.rollbackDiff ?? "";
  const read = await readRollbackDiff(stored, env.EVOLUTION_KEY, rollbackContext(row.employeeId, row.version));
  let content: string | null = null;
  let restoredFrom: "rollback_diff" | "parent_version" | null = null;
  if (read.ok && read.text.trim() !== "") {
    content = read.text;
    restoredFrom = "rollback_diff";
  } else if (row.parentVersion !== null) {
    // Graceful degradation (seed §6.3): the parent version's own row, when it is still kept.
    const parent = await findSoulVersion(db, row.employeeId, row.parentVersion);
    if (parent) {
      content = parent.content;
      restoredFrom = "parent_version";
    }
  }
  const diffState = read.ok
    ? { rollback_diff: read.encrypted ? "decrypted" : "plain" }
    : { rollback_diff: "unreadable", rollback_diff_error: read.reason };
  if (content === null) {
    await db.batch([
      appendEvent(
        db,
        {
          type: "evolution.soul_rollback_failed",
          subject: row.employeeId,
          payload: { severity: "critical", agent_id: row.employeeId, version: row.version, reason: why.reason, ...diffState },
          dedupeKey: `soul_rollback_failed:${row.employeeId}:${row.version}`,
        },
        now,
      ),
    ]);
    return { ...base, verdict: "rollback_failed", reason: read.ok ? "empty" : read.reason };
  }
  const version = (await latestVersionNumber(db, row.employeeId)) + 1;
  const hash = await sha256Hex(content);
  const write = soulVersionStatements(
    db,
    {
      employeeId: row.employeeId,
      version,
      content,
      sha256: hash,
      source: "rollback",
      reason: `rollback of version ${row.version}: ${why.reason}`,
      actor: "gvu_observation",
      parentVersion: row.version,
    },
    now,
  );
  const at = now.toISOString();
  const results = await db.batch([
    write.insert,
    appendEventWhere(
      db,
      {
        type: "evolution.soul_rolled_back",
        subject: row.employeeId,
        payload: {
          agent_id: row.employeeId,
          version: row.version,
          restored_version: version,
          sha256: hash,
          reason: why.reason,
          detail: why.detail,
          restored_from: restoredFrom,
          ...diffState,
        },
        dedupeKey: `soul_rolled_back:${row.employeeId}:${row.version}`,
      },
      now,
      sql`(${write.guard} AND ${observingSql(row)})`,
    ),
    db
      .update(soulVersions)
      .set({
        status: "rolled_back",
        postMetrics: why.post as Record<string, unknown>,
        decidedAt: at,
        decision: {
          verdict: "rollback",
          reason: why.reason,
          detail: why.detail,
          restored_version: version,
          restored_from: restoredFrom,
          ...diffState,
        },
      })
      .where(and(stillObserving(row), write.guard)),
    write.head,
    write.prune,
  ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  if (rowsChanged(results[3]) === 0) return { ...base, verdict: "moved" };
  return { ...base, verdict: "rollback", reason: why.reason };
}

/** A round waiting on a job that already ended (its owner call lost) is moved on from the job's row. */
export async function recoverLostJobEnds(env: Env, now: Date, graceMs = 2 * 60_000) {
  const db = getDb(env.DB);
  const stale = new Date(now.getTime() - graceMs).toISOString();
  const rows = await db
    .select({ round: gvuRounds, job: jobs })
    .from(gvuRounds)
    .innerJoin(jobs, eq(jobs.id, gvuRounds.pendingJobId))
    .where(
      and(
        inArray(gvuRounds.status, ["generating", "judging"]),
        inArray(jobs.status, ["completed", "failed", "dead"]),
        lt(gvuRounds.updatedAt, stale),
      ),
    )
    .limit(20)
    .all();
  for (const { round, job } of rows) {
    const end: JobEnd = {
      job_id: job.id,
      kind: job.kind,
      owner: { kind: "gvu_round", id: round.id },
      status: job.status as JobEnd["status"],
      attempt: job.attempt,
      at: job.finishedAt ?? job.updatedAt,
      ...(job.result ? { result: job.result } : {}),
      ...(job.error ? { error: job.error } : {}),
      reason: "recovered_by_tick",
    };
    await advanceRound(env, end, now);
  }
  return rows.length;
}

/** The `gvu` tick: start rounds for accepted legacy requests, resolve soul_change and soul_consolidation approvals, judge due observations, consolidate. */
export async function gvuTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const started = await startGvuRounds(env, now);
  const recovered = await recoverLostJobEnds(env, now);
  const approvals = await resolveSoulApprovals(env, now);
  const observed = await observeSoulVersions(env, now);
  // Decided consolidation approvals first: an applied one leaves nothing to consolidate, a denied one blocks its version.
  const consolidationApprovals = await resolveConsolidationApprovals(env, now);
  const consolidations = await consolidateSouls(env, now);
  return {
    started: started.filter((s) => s.outcome === "started").length,
    skipped: started.filter((s) => s.outcome === "skipped").length,
    waiting: started.filter((s) => s.outcome === "waiting").length,
    recovered,
    approvals: approvals.filter((a) => a.outcome !== "pending"),
    observed,
    consolidation_approvals: consolidationApprovals.filter((a) => a.outcome !== "pending"),
    consolidations: consolidations.filter((c) => c.outcome !== "not_needed"),
  };
}
