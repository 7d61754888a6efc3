import { eq, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { actionChangedEvent, checkConsumable, consumption, enqueueDeliveries, pollApproval, prepareApproval } from "../approvals/broker";
import type { ApprovalAction } from "../approvals/action-hash";
import { getDb, type Db } from "../db/client";
import { guarded } from "../db/guard";
import { gvuRounds, type EmployeeRow, type GvuRoundRow, type GvuRoundStatus } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { findEmployee } from "../tasks/employees";
import { employeeEvolutionConfig } from "./config";
import type { Contract } from "./contract";
import { buildAppliedSoul } from "./gvu-loop";
import { versionMetrics } from "./gvu-metrics";
import { finishRound, guardedBatch, isRoundMoved, roundStep } from "./gvu-round-store";
import type { GeneratorOutput, SoulVersionSummary } from "./gvu-types";
import type { VerificationResult } from "./gvu-verify";
import { observationEnd } from "./observation";
import { soulPatch } from "./soul-api";
import { protectRollbackDiff } from "./soul-crypto";
import { latestVersionNumber, loadContract, loadSoul, soulVersionStatements, type CurrentSoul } from "./soul-store";
import { gvuMayWriteSoul } from "./soul-run";
import { endRequest } from "./triggers";

/**
 * The legacy updater (seed 003 §4.5) and its governance (issue 23 item 5). An approved proposal is
 * appended to the SOUL (never a replacement); the previous SOUL is kept as the version's rollback
 * diff (AES-256-GCM with `EVOLUTION_KEY`, plain without); the version row lands before the head
 * moves, in one batch with the round's step, and the version is observed for
 * `observation_period_hours`. With `[evolution] require_approval` the change first becomes a
 * `soul_change` approval whose params are the exact diff; it applies only when a manager approved
 * that action hash, recomputed from the SOUL as it stands when applying (a SOUL that moved meanwhile
 * is a changed action: refused, audited, discarded).
 */

export const SOUL_APPROVAL_TTL_SECS = 3 * 86_400;

/** Bound to the version: a rollback diff moved to another row does not decrypt. */
export const rollbackContext = (employeeId: string, version: number) => `soul:${employeeId}:v${version}`;

/** The `soul_change` action: what a manager approves, byte for byte. */
export function soulChangeAction(
  employeeId: string,
  roundId: string,
  base: Pick<CurrentSoul, "version" | "sha256" | "content">,
  next: { soul: string; soul_hash: string },
): ApprovalAction {
  return {
    kind: "soul_change",
    subject: employeeId,
    params: {
      employee_id: employeeId,
      round_id: roundId,
      base_version: base.version,
      base_sha256: base.sha256,
      new_sha256: next.soul_hash,
      diff: soulPatch(`SOUL.md@v${base.version}`, base.content, "SOUL.md@proposed", next.soul),
    },
  };
}

export interface ApplyInput {
  round: GvuRoundRow;
  /** The job the round waited for (the judge's). */
  waitedFor: string;
  proposal: GeneratorOutput;
  verification: Extract<VerificationResult, { approved: true }>;
  generations: Record<string, unknown>[];
  attempts: number;
  inputs: { soul: CurrentSoul; contract: Contract; history: SoulVersionSummary[] };
  employee: EmployeeRow;
  extra: BatchItem<"sqlite">[];
}

/** The round's step out of `awaiting_approval`, landing only while it still waits on this approval. */
function approvalStep(
  db: Db,
  round: GvuRoundRow,
  status: GvuRoundStatus,
  fields: Partial<typeof gvuRounds.$inferInsert>,
  now: Date,
  extra?: SQL,
) {
  const cond = sql`${gvuRounds.status} = 'awaiting_approval' AND ${gvuRounds.approvalId} = ${round.approvalId}${extra ? sql` AND ${extra}` : sql``}`;
  return db
    .update(gvuRounds)
    .set({ ...fields, status: sql`${guarded(cond, status)}`, updatedAt: now.toISOString() })
    .where(eq(gvuRounds.id, round.id));
}

/** A passing generation: applied now, or a `soul_change` approval first. */
export async function applyOrAskApproval(env: Env, db: Db, a: ApplyInput, now: Date): Promise<void> {
  const cfg = await employeeEvolutionConfig(db, a.employee);
  const built = buildAppliedSoul(a.inputs.soul.content, a.proposal.proposed_changes);
  const more = { attempts: a.attempts, generations: a.generations, extra: a.extra };
  if (!gvuMayWriteSoul(cfg))
    return finishRound(env, db, a.round, a.waitedFor, "discarded", { kind: "discarded", reason: "legacy_path_off" }, now, more);
  if (!built.ok)
    return finishRound(env, db, a.round, a.waitedFor, "abandoned", { kind: "abandoned", reason: `apply_${built.reason}` }, now, more);
  const lastJudge = [...a.generations].reverse().find((g) => g.judge)?.judge ?? null;

  if (cfg.require_approval) {
    const action = soulChangeAction(a.round.employeeId, a.round.id, a.inputs.soul, built);
    const evidence = {
      round_id: a.round.id,
      request_id: a.round.requestId,
      proposal: a.proposal,
      verifier: {
        layers: ["L1", "L2", "L3", "L4"],
        generations: a.generations,
        confidence: a.verification.confidence,
        advisories: a.verification.advisories,
      },
      scores: { judge: lastJudge, confidence: a.verification.confidence },
      trigger_context: a.round.triggerContext.slice(0, 2_000),
    };
    const prepared = await prepareApproval(
      env,
      db,
      { action, evidence, ttlSecs: SOUL_APPROVAL_TTL_SECS, requestedBy: `gvu_round:${a.round.id}` },
      now,
    );
    const base = { agent_id: a.round.employeeId, round_id: a.round.id, approval_id: prepared.approvalId, action_hash: prepared.actionHash };
    if (prepared.status === "no_channel") {
      // Nobody can decide: fail closed, the change is discarded at once.
      const ok = await guardedBatch(db, [
        roundStep(
          db,
          a.round.id,
          a.waitedFor,
          "discarded",
          {
            ...fieldsOf(more),
            phase: null,
            pendingJobId: null,
            approvalId: prepared.approvalId,
            proposal: a.proposal as unknown as Record<string, unknown>,
            outcome: { kind: "discarded", reason: "approval_no_channel" },
            endedAt: now.toISOString(),
          },
          now,
        ),
        ...a.extra,
        ...prepared.statements,
        appendEvent(
          db,
          { type: "evolution.soul_change_discarded", subject: a.round.employeeId, payload: { ...base, reason: "no_channel" } },
          now,
        ),
      ]);
      if (ok) await endRequest(env, a.round.requestId, { status: "failed", reason: "approval_no_channel" }, now);
      return;
    }
    const ok = await guardedBatch(db, [
      roundStep(
        db,
        a.round.id,
        a.waitedFor,
        "awaiting_approval",
        {
          ...fieldsOf(more),
          phase: null,
          pendingJobId: null,
          approvalId: prepared.approvalId,
          proposal: a.proposal as unknown as Record<string, unknown>,
        },
        now,
      ),
      ...a.extra,
      ...prepared.statements,
      appendEvent(
        db,
        {
          type: "evolution.soul_change_requested",
          subject: a.round.employeeId,
          payload: { ...base, base_version: a.inputs.soul.version, new_sha256: built.soul_hash },
        },
        now,
      ),
    ]);
    if (!ok) return;
    await enqueueDeliveries(env, db, prepared.deliveries, now);
    // The lock and slot are not held while a person decides; the head check at apply time guards.
    await endRequest(env, a.round.requestId, { status: "done", reason: "awaiting_approval" }, now);
    return;
  }
  const applied = await applyVersion(
    env,
    db,
    {
      round: a.round,
      base: a.inputs.soul,
      built,
      proposal: a.proposal,
      contract: a.inputs.contract,
      observationHours: cfg.observation_period_hours,
      step: (fields, cond) => roundStep(db, a.round.id, a.waitedFor, "applied", { ...fieldsOf(more), ...fields }, now, cond),
      extra: a.extra,
      confidence: a.verification.confidence,
    },
    now,
  );
  if (applied === "applied") await endRequest(env, a.round.requestId, { status: "done", reason: "applied" }, now);
  else if (applied === "soul_changed")
    await finishRound(env, db, a.round, a.waitedFor, "discarded", { kind: "discarded", reason: "soul_changed" }, now, more);
  else if (applied === "key_invalid")
    await finishRound(env, db, a.round, a.waitedFor, "failed", { kind: "failed", reason: "evolution_key_invalid" }, now, more);
}

function fieldsOf(more: { attempts?: number; generations?: Record<string, unknown>[] }) {
  return {
    ...(more.attempts !== undefined ? { attempts: more.attempts } : {}),
    ...(more.generations ? { generations: more.generations } : {}),
  };
}

interface ApplyVersion {
  round: GvuRoundRow;
  base: CurrentSoul;
  built: { soul: string; soul_hash: string };
  proposal: GeneratorOutput;
  contract: Contract;
  observationHours: number;
  /** The round's own guarded step to `applied`, given the fields to set and the extra condition (the head). */
  step: (fields: Partial<typeof gvuRounds.$inferInsert>, cond: SQL) => BatchItem<"sqlite">;
  extra: BatchItem<"sqlite">[];
  /** Appended after the step's condition held: an approval's consumption. */
  after?: BatchItem<"sqlite">[];
  confidence: number | null;
  approval?: { id: string; hash: string };
}

/**
 * Seed §4.5 in one batch: the round's step (guarded: it still waits, and the head is still the
 * base), the version row, its event, the head, the pruning. Returns why it did not apply.
 */
async function applyVersion(env: Env, db: Db, v: ApplyVersion, now: Date): Promise<"applied" | "soul_changed" | "moved" | "key_invalid"> {
  const employeeId = v.round.employeeId;
  const version = (await latestVersionNumber(db, employeeId)) + 1;
  const rollback = await protectRollbackDiff(v.base.content, env.EVOLUTION_KEY, rollbackContext(employeeId, version));
  // A key that is configured but unusable: refuse rather than store the diff unprotected.
  if (!rollback.ok) return "key_invalid";
  const pre = await versionMetrics(db, employeeId, v.contract, new Date(now.getTime() - v.observationHours * 3_600_000), now);
  const obsEnd = observationEnd(now, v.observationHours);
  const write = soulVersionStatements(
    db,
    {
      employeeId,
      version,
      content: v.built.soul,
      sha256: v.built.soul_hash,
      source: "gvu",
      reason: v.proposal.rationale.slice(0, 500) || null,
      actor: `gvu_round:${v.round.id}`,
      parentVersion: v.base.version,
      gvu: {
        roundId: v.round.id,
        proposal: v.proposal.proposed_changes,
        preMetrics: pre as unknown as Record<string, unknown>,
        observationEnd: obsEnd,
        rollbackDiff: rollback.stored,
      },
    },
    now,
  );
  const at = now.toISOString();
  try {
    await db.batch([
      v.step(
        {
          appliedVersion: version,
          phase: null,
          pendingJobId: null,
          proposal: v.proposal as unknown as Record<string, unknown>,
          outcome: { kind: "applied", version, confidence: v.confidence },
          endedAt: at,
        },
        write.guard,
      ),
      ...v.extra,
      // Seed §4.5 step 5 before step 6: the version is recorded, then the SOUL moves.
      write.insert,
      appendEvent(
        db,
        {
          type: "evolution.soul_version_applied",
          subject: employeeId,
          payload: {
            agent_id: employeeId,
            round_id: v.round.id,
            version,
            parent_version: v.base.version,
            sha256: v.built.soul_hash,
            observation_end: obsEnd,
            rollback_diff_encrypted: rollback.encrypted,
            confidence: v.confidence,
            ...(v.approval ? { approval_id: v.approval.id, action_hash: v.approval.hash } : {}),
          },
        },
        now,
      ),
      write.head,
      write.prune,
      ...(v.after ?? []),
    ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    return "applied";
  } catch (err) {
    if (!isRoundMoved(err)) throw err;
    const current = await loadSoul(db, employeeId);
    return current && current.version !== v.base.version ? "soul_changed" : "moved";
  }
}

export type ApprovalResolution = {
  round_id: string;
  outcome:
    | "pending"
    | "applied"
    | "denied"
    | "expired"
    | "no_channel"
    | "action_changed"
    | "soul_changed"
    | "legacy_path_off"
    | "failed"
    | "moved";
};

/** The judge's score of the generation that passed (the last approved one of the round). */
function approvedConfidence(round: GvuRoundRow): number | null {
  const passed = [...(round.generations ?? [])].reverse().find((g) => g.verdict === "approved");
  return typeof passed?.confidence === "number" ? passed.confidence : null;
}

/**
 * The `gvu` tick's approval step: each round awaiting a `soul_change` approval is applied when a
 * manager approved exactly that action (its hash recomputed from the SOUL as it stands and the
 * round's proposal), discarded with an event when denied, expired or undecidable.
 */
export async function resolveSoulApprovals(env: Env, now: Date): Promise<ApprovalResolution[]> {
  const db = getDb(env.DB);
  const rounds = await db.select().from(gvuRounds).where(eq(gvuRounds.status, "awaiting_approval")).limit(50).all();
  const out: ApprovalResolution[] = [];
  for (const round of rounds) out.push({ round_id: round.id, outcome: await resolveOne(env, db, round, now) });
  return out;
}

async function resolveOne(env: Env, db: Db, round: GvuRoundRow, now: Date): Promise<ApprovalResolution["outcome"]> {
  const approval = round.approvalId ? await pollApproval(db, round.approvalId, now) : null;
  // An approval that cannot be read is no approval: fail closed, as if it had expired.
  const status = approval?.status ?? "expired";
  if (status === "pending") return "pending";
  if (status !== "approved") {
    await discard(db, round, status, now);
    return status;
  }
  const [employee, soul, contract] = await Promise.all([
    findEmployee(db, round.employeeId),
    loadSoul(db, round.employeeId),
    loadContract(db, round.employeeId),
  ]);
  const proposal = round.proposal as unknown as GeneratorOutput | null;
  if (!employee || !soul || !proposal) {
    await discard(db, round, "failed", now, { detail: "employee_or_proposal_gone" });
    return "failed";
  }
  const built = buildAppliedSoul(soul.content, proposal.proposed_changes);
  if (!built.ok) {
    await discard(db, round, "failed", now, { detail: `apply_${built.reason}` });
    return "failed";
  }
  // Recomputed from what is about to be done, never taken from the approval.
  const action = soulChangeAction(round.employeeId, round.id, soul, built);
  const check = await checkConsumable(db, round.approvalId!, action);
  if (!check.ok) {
    if (check.reason === "action_changed") {
      await discard(db, round, "action_changed", now, {}, [actionChangedEvent(db, round.approvalId!, check, `gvu_round:${round.id}`, now)]);
      return "action_changed";
    }
    // Gone, or already used: nothing this round could still apply under (fail closed, once).
    await discard(db, round, "failed", now, { detail: `approval_${check.reason}` });
    return "failed";
  }
  const cfg = await employeeEvolutionConfig(db, employee);
  // Approved while the employee was on the legacy path, which it has left since: the SOUL is read-only again.
  if (!gvuMayWriteSoul(cfg)) {
    await discard(db, round, "legacy_path_off", now);
    return "legacy_path_off";
  }
  const use = consumption(db, round.approvalId!, check.hash, `gvu_round:${round.id}`, now);
  const applied = await applyVersion(
    env,
    db,
    {
      round,
      base: soul,
      built,
      proposal,
      contract,
      observationHours: cfg.observation_period_hours,
      step: (fields, cond) => approvalStep(db, round, "applied", fields, now, sql`${cond} AND ${use.guard}`),
      extra: [],
      after: [use.event(), use.consume()],
      confidence: approvedConfidence(round),
      approval: { id: round.approvalId!, hash: check.hash },
    },
    now,
  );
  if (applied === "key_invalid") {
    await discard(db, round, "failed", now, { detail: "evolution_key_invalid" });
    return "failed";
  }
  return applied;
}

/** Denied, expired (TTL = DENY), no channel, a changed action or a failure: the change is discarded, with its event. */
async function discard(
  db: Db,
  round: GvuRoundRow,
  reason: string,
  now: Date,
  extra: Record<string, unknown> = {},
  before: BatchItem<"sqlite">[] = [],
) {
  await guardedBatch(db, [
    approvalStep(db, round, "discarded", { outcome: { kind: "discarded", reason, ...extra }, endedAt: now.toISOString() }, now),
    ...before,
    appendEvent(
      db,
      {
        type: "evolution.soul_change_discarded",
        subject: round.employeeId,
        payload: { agent_id: round.employeeId, round_id: round.id, approval_id: round.approvalId, reason, ...extra },
        dedupeKey: `soul_change_discarded:${round.id}`,
      },
      now,
    ),
  ]);
}
