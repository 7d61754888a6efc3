import { and, asc, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { ApprovalAction } from "../approvals/action-hash";
import { actionChangedEvent, checkConsumable, consumption, enqueueDeliveries, pollApproval, prepareApproval } from "../approvals/broker";
import { getDb, type Db } from "../db/client";
import { guarded, isGuardFailure } from "../db/guard";
import { approvals, events, evolutionRequests, gvuRounds, jobs, soulHeads, type ApprovalRow } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { appendEventWhere, insertWhere, rowsChanged } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { answerOf } from "../jobs/model-answer";
import { utf8Bytes } from "../jobs/limits";
import { findEmployee } from "../tasks/employees";
import { employeeEvolutionConfig, type EvolutionConfig } from "./config";
import { checkConsolidation, CONSOLIDATE_TARGET_BYTES, lostToCap, type ConsolidationCheck } from "./soul-consolidate";
import { soulPatch } from "./soul-api";
import { gvuMayWriteSoul } from "./soul-run";
import { latestVersionNumber, loadContract, loadSoul, MAX_SOUL_BYTES, soulVersionStatements, type CurrentSoul } from "./soul-store";

/**
 * Governed consolidation (issue 39; seed 003 R2 under `[evolution] require_approval`). A checked
 * consolidation result is not applied by the engine: it becomes a `soul_consolidation` approval
 * whose params bind the exact change (base version and fingerprint, the new fingerprint, both sizes,
 * the unified diff), like a GVU `soul_change`. The `gvu` tick applies it once a manager approved that
 * action hash, recomputed at apply time from the SOUL as it stands and the job's stored answer
 * (checked again against the contract as it stands): the SOUL must still be the base version, else
 * the approval is refused as stale (`soul_changed`) and the SOUL stays as it is. Denied, expired or
 * undecidable requests are discarded with an event. Each approval ends with exactly one event keyed
 * `soul_consolidation_approval:<approval>` (`evolution.soul_consolidated` or
 * `evolution.soul_consolidation_discarded`): the approvals without one are the ones still open.
 *
 * The same module writes an applied consolidation for both modes (`consolidationStatements`), and
 * hands the emergency request the cap cost back to the rounds (`retryStatement`).
 */

export const CONSOLIDATION_APPROVAL_KIND = "soul_consolidation" as const;
export const CONSOLIDATION_APPROVAL_TTL_SECS = 3 * 86_400;

export const approvalKey = (approvalId: string) => `soul_consolidation_approval:${approvalId}`;
export const holderOf = (jobId: string) => `soul_consolidation:${jobId}`;

type CheckedSoul = Extract<ConsolidationCheck, { ok: true }>;

/** The `soul_consolidation` action: what a manager approves, byte for byte (the diff carries both texts). */
export function consolidationAction(
  employeeId: string,
  jobId: string,
  base: Pick<CurrentSoul, "version" | "sha256" | "content">,
  next: Pick<CheckedSoul, "soul" | "sha256" | "bytes">,
): ApprovalAction {
  return {
    kind: CONSOLIDATION_APPROVAL_KIND,
    subject: employeeId,
    params: {
      employee_id: employeeId,
      job_id: jobId,
      base_version: base.version,
      base_sha256: base.sha256,
      new_sha256: next.sha256,
      bytes_before: utf8Bytes(base.content),
      bytes_after: next.bytes,
      diff: soulPatch(`SOUL.md@v${base.version}`, base.content, "SOUL.md@consolidated", next.soul),
    },
  };
}

/** `-N lines, +M lines` of a unified diff: what a channel that cannot carry the diff still shows. */
function diffStat(diff: string): string {
  let removed = 0;
  let added = 0;
  for (const line of diff.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++")) continue;
    if (line.startsWith("-")) removed++;
    else if (line.startsWith("+")) added++;
  }
  return `-${removed} lines, +${added} lines`;
}

/** Approvals of consolidations still open (no end event yet), oldest first; one employee's when `employeeId` is given. */
export function openConsolidationApprovals(db: Db, employeeId?: string, limit = 50): Promise<ApprovalRow[]> {
  return db
    .select()
    .from(approvals)
    .where(
      and(
        eq(approvals.actionKind, CONSOLIDATION_APPROVAL_KIND),
        inArray(approvals.status, ["pending", "approved", "denied", "expired"]),
        employeeId === undefined ? undefined : eq(approvals.subject, employeeId),
        sql`NOT EXISTS (SELECT 1 FROM ${events} WHERE ${events.dedupeKey} = 'soul_consolidation_approval:' || ${approvals.id})`,
      ),
    )
    .orderBy(asc(approvals.seq))
    .limit(limit)
    .all();
}

/** A person's denial of a consolidation of this very version: it stands until the SOUL changes. */
export async function deniedFor(db: Db, employeeId: string, version: number): Promise<string | null> {
  const row = await db
    .select({ id: approvals.id })
    .from(approvals)
    .where(
      and(
        eq(approvals.actionKind, CONSOLIDATION_APPROVAL_KIND),
        eq(approvals.subject, employeeId),
        eq(approvals.status, "denied"),
        sql`json_extract(${approvals.params}, '$.base_version') = ${version}`,
      ),
    )
    .orderBy(desc(approvals.seq))
    .get();
  return row?.id ?? null;
}

/**
 * The emergency request the cap cost (the newest legacy round on `base` that failed, was skipped or
 * was abandoned because of the cap), accepted again for the rounds, landing only with the new version
 * (`guard`). None when the employee is not on the legacy path or a request already waits.
 */
async function retryStatement(db: Db, employeeId: string, base: number, cfg: EvolutionConfig, now: Date, guard: SQL) {
  if (!cfg.gvu_enabled || !cfg.legacy_soul_evolution) return null;
  const waiting = await db
    .select({ id: evolutionRequests.id })
    .from(evolutionRequests)
    .where(
      and(
        eq(evolutionRequests.agentId, employeeId),
        eq(evolutionRequests.kind, "emergency_evolution"),
        inArray(evolutionRequests.status, ["accepted", "running"]),
      ),
    )
    .get();
  if (waiting) return null;
  const rounds = await db
    .select()
    .from(gvuRounds)
    .where(
      and(
        eq(gvuRounds.employeeId, employeeId),
        eq(gvuRounds.baseVersion, base),
        inArray(gvuRounds.status, ["failed", "skipped", "abandoned"]),
      ),
    )
    .orderBy(desc(gvuRounds.createdAt))
    .limit(20)
    .all();
  const lost = rounds.find((r) =>
    lostToCap({ status: r.status, generations: r.generations ?? [], outcome: (r.outcome as Record<string, unknown>) ?? null }),
  );
  if (!lost) return null;
  const requestId = newId("evr");
  const reason = String((lost.outcome as Record<string, unknown> | null)?.reason ?? "soul_too_large");
  return {
    info: { request_id: requestId, of_round_id: lost.id, of_request_id: lost.requestId, reason },
    statement: insertWhere(
      db,
      evolutionRequests,
      {
        id: requestId,
        agentId: employeeId,
        kind: "emergency_evolution",
        status: "accepted",
        reason: `retry_after_consolidation:${lost.requestId}`.slice(0, 200),
        context: lost.triggerContext,
        createdAt: now.toISOString(),
      },
      guard,
    ),
  };
}

export interface ConsolidationWrite {
  employeeId: string;
  base: CurrentSoul;
  check: CheckedSoul;
  jobId: string;
  cfg: EvolutionConfig;
  /** The end event's key: the job's (auto) or the approval's (governed). */
  dedupeKey: string;
  approval?: { id: string; hash: string };
}

/**
 * One applied consolidation as one batch: the version row (before the head moves, seed §4.5), its
 * `evolution.soul_consolidated` event, the request the cap cost given back to the rounds, the head,
 * the pruning; with an approval also its consumption, and then the head's move aborts the whole
 * batch unless the head is still the base and the approval still usable (nothing lands half).
 * Returns whether the head moved.
 */
export async function writeConsolidation(db: Db, w: ConsolidationWrite, now: Date): Promise<"applied" | "soul_changed" | "moved"> {
  const { employeeId, base, check } = w;
  const version = (await latestVersionNumber(db, employeeId)) + 1;
  const actor = holderOf(w.jobId);
  const write = soulVersionStatements(
    db,
    {
      employeeId,
      content: check.soul,
      sha256: check.sha256,
      source: "consolidation",
      reason: (check.summary || "consolidated under the SOUL cap").slice(0, 500),
      actor,
      parentVersion: base.version,
      version,
    },
    now,
  );
  const use = w.approval ? consumption(db, w.approval.id, w.approval.hash, actor, now) : null;
  const guard = use ? sql`(${write.guard} AND ${use.guard})` : write.guard;
  const retry = await retryStatement(db, employeeId, base.version, w.cfg, now, guard);
  const at = now.toISOString();
  const head = use
    ? db
        .update(soulHeads)
        .set({
          version: sql`${guarded(sql`${soulHeads.version} = ${base.version} AND ${use.guard}`, version)}`,
          sha256: check.sha256,
          updatedAt: at,
          updatedBy: actor,
        })
        .where(eq(soulHeads.employeeId, employeeId))
    : write.head;
  const statements: BatchItem<"sqlite">[] = [
    write.insert,
    appendEventWhere(
      db,
      {
        type: "evolution.soul_consolidated",
        subject: employeeId,
        payload: {
          agent_id: employeeId,
          job_id: w.jobId,
          version,
          parent_version: base.version,
          sha256: check.sha256,
          bytes_before: utf8Bytes(base.content),
          bytes_after: check.bytes,
          keyword_recall: check.keyword_recall,
          ...(w.approval ? { approval_id: w.approval.id, action_hash: w.approval.hash } : {}),
          ...(retry ? { retry: retry.info } : {}),
        },
        dedupeKey: w.dedupeKey,
      },
      now,
      guard,
    ),
    ...(retry ? [retry.statement] : []),
    ...(use ? [use.event(write.guard)] : []),
    head,
    ...(use ? [use.consume()] : []),
    write.prune,
  ];
  try {
    const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    const headAt = statements.indexOf(head);
    if (rowsChanged(results[headAt]) > 0) return "applied";
  } catch (err) {
    if (!isGuardFailure(err, "soul_heads.version")) throw err;
  }
  const current = await loadSoul(db, employeeId);
  return current && current.version !== base.version ? "soul_changed" : "moved";
}

/**
 * A checked result under `require_approval`: one approval per job (guarded by the job's outcome
 * event, so a repeated owner call or the tick's recovery asks nobody twice), landing with
 * `evolution.soul_consolidation_requested`; nobody to decide → discarded at once (fail closed).
 */
export async function requestConsolidationApproval(
  env: Env,
  db: Db,
  input: { employeeId: string; jobId: string; base: CurrentSoul; check: CheckedSoul; outcomeKey: string },
  now: Date,
): Promise<void> {
  const { employeeId, jobId, base, check } = input;
  const action = consolidationAction(employeeId, jobId, base, check);
  const notYet = sql`NOT EXISTS (SELECT 1 FROM ${events} WHERE ${events.dedupeKey} = ${input.outcomeKey})`;
  const evidence = {
    change: "a full-text rewrite of SOUL.md under its cap (seed 003 R2), replacing the whole text: not an append",
    bytes_before: utf8Bytes(base.content),
    bytes_after: check.bytes,
    target_bytes: CONSOLIDATE_TARGET_BYTES,
    cap_bytes: MAX_SOUL_BYTES,
    diff_stat: diffStat(action.params.diff as string),
    summary: check.summary,
    keyword_recall: check.keyword_recall,
    checks: ["json", "size", "smaller", "characters", "must_not", "must_always", "secrets", "headings", "keywords"],
    job_id: jobId,
  };
  const prepared = await prepareApproval(
    env,
    db,
    { action, evidence, ttlSecs: CONSOLIDATION_APPROVAL_TTL_SECS, requestedBy: holderOf(jobId) },
    now,
    notYet,
  );
  const payload = {
    agent_id: employeeId,
    job_id: jobId,
    approval_id: prepared.approvalId,
    action_hash: prepared.actionHash,
    base_version: base.version,
    new_sha256: check.sha256,
    bytes_before: evidence.bytes_before,
    bytes_after: check.bytes,
  };
  const noChannel = prepared.status === "no_channel";
  // The job's one outcome event: asked, or (nobody could decide, so nothing can apply) discarded at once.
  const results = await db.batch([
    ...prepared.statements,
    appendEvent(
      db,
      {
        type: noChannel ? "evolution.soul_consolidation_discarded" : "evolution.soul_consolidation_requested",
        subject: employeeId,
        payload: noChannel ? { ...payload, reason: "no_channel" } : payload,
        dedupeKey: input.outcomeKey,
      },
      now,
    ),
  ]);
  if (rowsChanged(results[0]) > 0 && prepared.status === "pending") await enqueueDeliveries(env, db, prepared.deliveries, now);
}

export type ConsolidationResolution = {
  approval_id: string;
  employee_id: string;
  outcome:
    | "pending"
    | "applied"
    | "denied"
    | "expired"
    | "soul_changed"
    | "action_changed"
    | "gvu_disabled"
    | "legacy_path_off"
    | "refused"
    | "failed"
    | "moved";
};

/** The `gvu` tick's step for consolidation approvals: apply the approved ones once, discard the rest with an event. */
export async function resolveConsolidationApprovals(env: Env, now: Date): Promise<ConsolidationResolution[]> {
  const db = getDb(env.DB);
  const out: ConsolidationResolution[] = [];
  for (const row of await openConsolidationApprovals(db))
    out.push({ approval_id: row.id, employee_id: row.subject, outcome: await resolveOne(db, row, now) });
  return out;
}

async function resolveOne(db: Db, row: ApprovalRow, now: Date): Promise<ConsolidationResolution["outcome"]> {
  const params = row.params;
  const base = typeof params.base_version === "number" ? params.base_version : null;
  const jobId = typeof params.job_id === "string" ? params.job_id : null;
  const employeeId = row.subject;
  const discard = (reason: string, detail?: string, before: BatchItem<"sqlite">[] = []) =>
    db.batch([
      appendEvent(
        db,
        {
          type: "evolution.soul_consolidation_discarded",
          subject: employeeId,
          payload: { agent_id: employeeId, approval_id: row.id, job_id: jobId, base_version: base, reason, ...(detail ? { detail } : {}) },
          dedupeKey: approvalKey(row.id),
        },
        now,
      ),
      ...before,
    ]);
  const approval = await pollApproval(db, row.id, now);
  const status = approval?.status ?? "expired";
  if (status === "pending") return "pending";
  if (status !== "approved") {
    // Denied by a person, or expired (TTL = DENY): the SOUL stays as it is.
    await discard(status);
    return status === "denied" ? "denied" : "expired";
  }
  if (base === null || jobId === null) {
    await discard("failed", "the approval's params name no base version or job");
    return "failed";
  }
  const [employee, soul, contract, job] = await Promise.all([
    findEmployee(db, employeeId),
    loadSoul(db, employeeId),
    loadContract(db, employeeId),
    db.select({ result: jobs.result }).from(jobs).where(eq(jobs.id, jobId)).get(),
  ]);
  if (!employee || !soul) {
    await discard("failed", "employee_gone");
    return "failed";
  }
  // Stale: the approval was for the SOUL as it was; a text computed from another one is never applied.
  if (soul.version !== base) {
    await discard("soul_changed", `approved for version ${base}, but the SOUL is at version ${soul.version} now`);
    return "soul_changed";
  }
  const cfg = await employeeEvolutionConfig(db, employee);
  if (!cfg.gvu_enabled) {
    await discard("gvu_disabled");
    return "gvu_disabled";
  }
  if (!gvuMayWriteSoul(cfg) && utf8Bytes(soul.content) <= MAX_SOUL_BYTES) {
    await discard("legacy_path_off");
    return "legacy_path_off";
  }
  const answer = answerOf(job?.result ?? undefined);
  if (!job || !answer.text || answer.offline) {
    await discard("failed", "the consolidation job's answer is gone");
    return "failed";
  }
  // The same checks as when it was asked, on the SOUL and the contract as they stand now.
  const check = checkConsolidation({ original: soul.content, reply: answer.text, contract });
  if (!check.ok) {
    await discard(check.reason, check.detail);
    return "refused";
  }
  const action = consolidationAction(employeeId, jobId, soul, check);
  const consumable = await checkConsumable(db, row.id, action);
  if (!consumable.ok) {
    if (consumable.reason === "action_changed") {
      await discard("action_changed", undefined, [actionChangedEvent(db, row.id, consumable, holderOf(jobId), now)]);
      return "action_changed";
    }
    await discard("failed", `approval_${consumable.reason}`);
    return "failed";
  }
  const applied = await writeConsolidation(
    db,
    {
      employeeId,
      base: soul,
      check,
      jobId,
      cfg,
      dedupeKey: approvalKey(row.id),
      approval: { id: row.id, hash: consumable.hash },
    },
    now,
  );
  if (applied === "soul_changed") {
    const current = await loadSoul(db, employeeId);
    await discard("soul_changed", `approved for version ${base}, but the SOUL is at version ${current?.version ?? "?"} now`);
  }
  return applied;
}
