import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getDb, type Db } from "../db/client";
import { jobs } from "../db/schema";
import { getRunnerInbox } from "../durable-objects/runner-inbox";
import { getTaskBudget } from "../durable-objects/task-budget";
import { getTeamAdmission, type AdmittedTicket } from "../durable-objects/team-admission";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { newId } from "../lib/ids";
import type { JobError } from "../jobs/payloads";
import { dispatchJob, prepareJob, REDACTED_SECRET } from "../jobs/submit";
import {
  abortRound,
  beginRound,
  bestRound,
  markStage,
  onStageEnd,
  TERMINAL_PHASES,
  type RoundState,
  type StageEnd,
  type StageRecord,
} from "./composer";
import { classifyFailure, configFingerprintHard, evidenceGrade, appendRoleTurn, sumUsageLegs } from "./ledger";
import { causeChainText, loadLeg, rewritePacket, type LegRef } from "./legs";
import { readTeamLimits } from "./limits";
import { mintMemberToken, revokeRoundMemberTokens } from "./member-token";
import { roleTeamWindow, ROLE_TEAM_WINDOW_MS } from "./rate";
import { findRound, insertRound, listRounds, mutateRound, stateOf } from "./round-store";
import { findTeamSpec } from "./spec-store";
import {
  admissionLimits,
  loadContext,
  OUTPUT_LEG,
  roundEvent,
  stageIds,
  stageRequest,
  TOKEN_TTL_MS,
  type RoundContext,
} from "./stage-request";
import type { TaskPacket } from "./packet";
import type { TeamStagePayload, TeamStageResult } from "./stage-job";
import { settleTaskForRound } from "./task-settle";
import { recheckFrozenSpec, type TeamSpec } from "./validate";

/**
 * Drives rounds through the real pieces: it asks the pure composer what to do, and does it (leg
 * reads, the TaskBudget and TeamAdmission objects, member tokens, runner jobs through the dispatch
 * queue, the role ledger, events). Every step is safe to repeat: stage launches and ends are keyed
 * by stage id and applied through the round's version lock.
 */
export type StartRoundResult = { state: RoundState };

/**
 * Starts the task's next round: re-checks the frozen spec (rules 2 and 3) before any spawn is
 * spent, plans the round against the task's budget (degrading along the chain, or parking the task
 * in needs_human "budget exhausted" with the best round so far), then launches its planner.
 */
export async function startTeamRound(env: Env, taskId: string, now: Date): Promise<StartRoundResult> {
  const db = getDb(env.DB);
  const specRow = await findTeamSpec(db, taskId);
  if (!specRow?.spec) throw new AppError("conflict", `task ${taskId} has no frozen team spec`);
  const gate = (specRow.gate ?? {}) as { decision?: string };
  const previous = (await listRounds(db, taskId)).map(stateOf);
  if (previous.some((r) => !TERMINAL_PHASES.has(r.phase))) throw new AppError("conflict", `task ${taskId} already has a round in progress`);
  if (previous.some((r) => r.phase === "solo")) throw new AppError("conflict", `task ${taskId} went solo after its gray-zone plan`);
  if (gate.decision !== "team" && gate.decision !== "gray")
    throw new AppError("conflict", `task ${taskId}'s gate decided ${gate.decision ?? "nothing"}`);
  // The gray zone is decided by the first round's real decomposition; later rounds are team rounds.
  const mode = gate.decision === "gray" && previous.length === 0 ? "gray" : "team";
  const roundNo = previous.length + 1;
  const roundId = newId("trnd");
  const base = { round_id: roundId, task_id: taskId, round_no: roundNo, mode } as const;
  const spec = specRow.spec as unknown as TeamSpec;

  const check = recheckFrozenSpec(spec);
  if (!check.ok) {
    const state: RoundState = {
      ...base,
      phase: "failed",
      plan: { planner: true, executors: 1, verifier: true, repair: false, utility: false },
      degrade_steps: [],
      stages: [],
      outcome: { status: "failed", reason: check.reason, detail: check.message },
    };
    await createRound(db, taskId, [
      ...insertRound(db, state, now),
      roundEvent(db, state, "team_round_failed", { reason: check.reason, role: check.role, message: check.message }, now),
    ]);
    return { state };
  }

  const limits = await readTeamLimits(db);
  const want = { planner: true, executors: spec.executor_fanout, repair: true, utility: true };
  const plan = await getTaskBudget(env, taskId).planRound({ round: roundNo, want, limits: limits.team_budget, now: now.getTime() });
  if (!plan.ok) {
    const best = bestRound(previous);
    const state: RoundState = {
      ...base,
      phase: "needs_human",
      plan: { ...want, verifier: true },
      degrade_steps: plan.steps,
      stages: [],
      outcome: { status: "needs_human", reason: "budget_exhausted", detail: plan.detail, pause_class: "budget_exhausted" },
    };
    await createRound(db, taskId, [
      ...insertRound(db, state, now),
      roundEvent(
        db,
        state,
        "team_budget_exhausted",
        {
          steps: plan.steps,
          detail: plan.detail,
          best_round: best ? { round_id: best.round_id, round: best.round_no, verdict: best.verdict ?? null } : null,
        },
        now,
      ),
    ]);
    return { state };
  }

  const t = beginRound({ ...base, plan: plan.plan, degrade_steps: plan.steps }, stageIds);
  await createRound(db, taskId, [
    ...insertRound(db, t.state, now),
    roundEvent(db, t.state, "team_round_started", { mode, plan: plan.plan, cost: plan.cost, degrade_steps: plan.steps }, now),
    ...(plan.steps.length
      ? [roundEvent(db, t.state, "team_budget_degraded", { steps: plan.steps, remaining_before: plan.remaining_before }, now)]
      : []),
  ]);
  await launchStages(env, roundId, t.launch, now);
  return { state: (await findRound(db, roundId).then((r) => r && stateOf(r))) ?? t.state };
}

/** Creates a round; a concurrent start of the same round number loses on the unique key, as a 409. */
async function createRound(db: Db, taskId: string, statements: [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]) {
  try {
    await db.batch(statements);
  } catch (err) {
    if (causeChainText(err).includes("UNIQUE constraint failed: team_rounds."))
      throw new AppError("conflict", `task ${taskId} started that round concurrently`);
    throw err;
  }
}

async function launchStages(env: Env, roundId: string, stageIds: readonly string[], now: Date) {
  for (const stageId of stageIds) await launchStage(env, roundId, stageId, now);
}

async function launchPromoted(env: Env, promoted: readonly AdmittedTicket[], now: Date) {
  for (const t of promoted) await launchStage(env, t.round_id, t.ticket_id, now);
}

/**
 * Launches one stage, once: admission (queue when scaffolds are full), the spawn charge, the member
 * token and the runner job land together with the stage's `dispatched` mark, then the job goes to the
 * dispatch queue. A stage that cannot be admitted, charged or dispatched fails, visibly. True when
 * this call dispatched the stage's job (false: it waits for the rate window or a scaffold slot, it
 * failed, or there was nothing to launch).
 */
export async function launchStage(env: Env, roundId: string, stageId: string, now: Date): Promise<boolean> {
  const db = getDb(env.DB);
  const row = await findRound(db, roundId);
  if (!row) return false;
  const state = stateOf(row);
  const stage = state.stages.find((s) => s.stage_id === stageId);
  if (!stage || TERMINAL_PHASES.has(state.phase) || (stage.status !== "pending" && stage.status !== "waiting_admission")) return false;
  const ctx = await loadContext(db, state.task_id);
  const role = ctx.spec.roles[stage.role];

  // The request is checked whole before it may wait for a slot or spend a spawn: an invalid one is
  // refused, never queued (retrying could not make it valid).
  const draft = await stageRequest(db, state, stage, ctx, now);
  if (!draft) {
    await endStage(
      env,
      roundId,
      stageId,
      { status: "failed", error: { code: "invalid_stage_request", message: "the stage's job would not be a valid team_stage payload" } },
      now,
    );
    return false;
  }

  const window = roleTeamWindow(env);
  if (window) {
    const rate = await window.tryAcquire({
      key: `role_team:${ctx.employeeId}`,
      limit: ctx.limits.role_team_max_in_window,
      windowMs: ROLE_TEAM_WINDOW_MS,
      now: now.getTime(),
      token: stageId,
    });
    if (!rate.ok) return false; // stays pending; the team tick launches it again
  }

  const admission = await getTeamAdmission(env).admit({
    ticket_id: stageId,
    round_id: roundId,
    limits: admissionLimits(ctx.limits),
    now: now.getTime(),
  });
  if (admission.status === "queued") {
    await mutateRound(db, roundId, `queue:${stageId}`, now, (s) => {
      const st = s.stages.find((x) => x.stage_id === stageId);
      if (st?.status !== "pending") return null;
      return {
        state: markStage(s, stageId, { status: "waiting_admission" }),
        statements: [roundEvent(db, s, "team_stage_queued", { stage_id: stageId, role: stage.role, position: admission.position }, now)],
        result: null,
      };
    });
    return false;
  }
  if (admission.status === "refused") {
    await endStage(
      env,
      roundId,
      stageId,
      {
        status: "failed",
        error: {
          code: admission.reason === "expired" ? "admission_expired" : "admission_refused",
          message: `scaffold admission: ${admission.reason}`,
        },
      },
      now,
    );
    return false;
  }

  const charge = await getTaskBudget(env, state.task_id).charge({
    stage_key: stageId,
    kind: stage.kind,
    round: state.round_no,
    limits: ctx.limits.team_budget,
    now: now.getTime(),
  });
  if (!charge.granted) {
    await endStage(
      env,
      roundId,
      stageId,
      { status: "failed", error: { code: "budget_exhausted", message: "no spawn left in the task's budget" } },
      now,
    );
    return false;
  }

  const expiresAt = new Date(now.getTime() + TOKEN_TTL_MS);
  const token = await mintMemberToken(
    db,
    { kind: "team_stage", task_id: state.task_id, round: state.round_no, round_id: roundId, role: stage.role, stage_id: stageId },
    expiresAt,
    now,
  );
  const payload: TeamStagePayload = { ...draft, member_token: token.token, member_token_expires_at: expiresAt.toISOString() };
  const prepared = prepareJob(db, { kind: "team_stage", payload, owner: { kind: "team_round", id: roundId } }, now, undefined, {
    // The D1 row never keeps the member token; the runner inbox holds it until the job ends.
    rowPayload: { ...payload, member_token: REDACTED_SECRET },
  });
  const launched = await mutateRound(db, roundId, `dispatch:${stageId}`, now, (s) => {
    const st = s.stages.find((x) => x.stage_id === stageId);
    if (TERMINAL_PHASES.has(s.phase) || (st?.status !== "pending" && st?.status !== "waiting_admission")) return null;
    return {
      state: markStage(s, stageId, { status: "dispatched", job_id: prepared.jobId, member_id: token.id }),
      statements: [
        token.insert,
        ...prepared.statements,
        roundEvent(
          db,
          s,
          "team_stage_dispatched",
          {
            stage_id: stageId,
            stage: stage.kind,
            role: stage.role,
            runtime: role.runtime,
            model: role.model,
            effort: role.effort ?? null,
            job_id: prepared.jobId,
            rate_window: window ? "role_team" : "absent",
          },
          now,
        ),
      ],
      result: true,
    };
  });
  if (!launched) return false;
  try {
    await dispatchJob(env, prepared.message);
    return true;
  } catch (err) {
    console.error(`team: stage ${stageId} could not be queued`, err);
    await db
      .update(jobs)
      .set({
        status: "dead",
        error: { code: "dispatch_failed", message: "the dispatch queue refused the stage job" },
        updatedAt: now.toISOString(),
        finishedAt: now.toISOString(),
      })
      .where(and(eq(jobs.id, prepared.jobId), eq(jobs.status, "queued")));
    await endStage(
      env,
      roundId,
      stageId,
      { status: "failed", error: { code: "dispatch_failed", message: "the dispatch queue refused the stage job" } },
      now,
    );
    return false;
  }
}

/** The packet with its hash-less artifact declarations filled from what the receipts observed. */
function fillArtifactHashes(packet: TaskPacket, observed: ReadonlyMap<string, { sha256?: string; bytes?: number }>): TaskPacket {
  let changed = false;
  const artifacts = packet.artifacts.map((a) => {
    const seen = a.path !== undefined && a.sha256 === undefined ? observed.get(a.path) : undefined;
    if (!seen?.sha256) return a;
    changed = true;
    return { ...a, sha256: seen.sha256, ...(a.bytes === undefined && seen.bytes !== undefined ? { bytes: seen.bytes } : {}) };
  });
  return changed ? { ...packet, artifacts } : packet;
}

export type StageOutcome =
  | { status: "completed"; result?: TeamStageResult }
  | { status: "failed"; error: { code: string; message: string }; ran?: NonNullable<JobError["ran"]> };

/**
 * A stage ended (its job completed, failed or died, or it never got a runner). Records the ledger
 * row, corrects the claimed fidelity of the stage's own packets, advances the round, frees the
 * stage's scaffold slot, launches what comes next, and finishes the round when it ended.
 */
export async function endStage(env: Env, roundId: string, stageId: string, outcome: StageOutcome, now: Date): Promise<void> {
  const db = getDb(env.DB);
  const row = await findRound(db, roundId);
  if (!row) return;
  const state = stateOf(row);
  const stage = state.stages.find((s) => s.stage_id === stageId);
  if (!stage || stage.status === "completed" || stage.status === "failed") return;
  const ctx = await loadContext(db, state.task_id);
  const role = ctx.spec.roles[stage.role];
  const [from, to] = OUTPUT_LEG[stage.kind];
  const leg: LegRef = { taskId: state.task_id, roundNo: state.round_no, from, to };

  const result = outcome.status === "completed" ? outcome.result : undefined;
  // A failed stage says what ran only when something was spawned; otherwise these stay empty.
  const ran = outcome.status === "failed" ? outcome.ran : undefined;
  const grade = evidenceGrade(result?.evidence);
  const own = outcome.status === "completed" ? (await loadLeg(db, leg, now)).packets.filter((p) => p.writtenBy === stageId) : [];

  // The member's claimed fidelity is overwritten by what was observed, and the mismatch audited; an
  // artifact declared without a hash gets the one its receipt observed (a wrong declared hash is kept
  // as declared: the receipt and its audit row say mismatch, the packet is never quietly corrected).
  const corrections: BatchItem<"sqlite">[] = [];
  if (stage.kind === "execute" || stage.kind === "repair") {
    const observed = new Map((result?.artifact_receipts ?? []).filter((r) => r.state === "exists" && r.sha256).map((r) => [r.path, r]));
    for (const p of own) {
      const filled = fillArtifactHashes(p.packet, observed);
      const fidelityWrong = p.packet.fidelity !== grade;
      if (!fidelityWrong && filled === p.packet) continue;
      corrections.push(rewritePacket(db, leg, p.slot, { ...filled, fidelity: grade }, p.updatedAt, now));
      if (fidelityWrong)
        corrections.push(
          roundEvent(
            db,
            state,
            "team_packet_fidelity_corrected",
            { stage_id: stageId, packet_id: p.packet.packet_id, claimed: p.packet.fidelity, observed: grade },
            now,
            `fidelity:${stageId}:${p.packet.packet_id}`,
          ),
        );
    }
    for (const audit of result?.artifact_audits ?? []) {
      corrections.push(
        roundEvent(
          db,
          state,
          audit.type,
          { stage_id: stageId, path: audit.path, detail: audit.detail },
          now,
          `${audit.type}:${stageId}:${audit.path}`,
        ),
      );
    }
  }
  if (corrections.length) await db.batch(corrections as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);

  const usage = sumUsageLegs(result?.legs ? result.legs.map((l) => l.usage) : [result?.usage]);
  const failure = outcome.status === "failed" ? classifyFailure(outcome.error.code) : null;
  await appendRoleTurn(
    db,
    {
      task_id: state.task_id,
      round: state.round_no,
      role: stage.role,
      stage: stage.kind,
      stage_id: stageId,
      member_id: stage.member_id ?? null,
      job_id: stage.job_id ?? null,
      requested_runtime: role.runtime,
      request_model: role.model,
      runtime_used: result?.runtime ?? ran?.runtime ?? null,
      response_model: result?.model ?? ran?.model ?? null,
      provider: result?.provider ?? ran?.provider ?? null,
      effort: role.effort ?? null,
      packets: own.map((p) => p.packet.packet_id),
      evidence_grade: grade,
      outcome: outcome.status,
      failure_edge: failure?.failure_edge ?? null,
      fault_side: failure?.fault_side ?? null,
      config_fingerprint_hard: await configFingerprintHard(stage.role, role.runtime, role.model),
      ...usage,
      ...(result?.cost_usd !== undefined ? { cost_usd: result.cost_usd } : {}),
    },
    now,
  );

  const ev: StageEnd =
    outcome.status === "completed"
      ? {
          stage_id: stageId,
          status: "completed",
          packets: own.map((p) => ({ packet_id: p.packet.packet_id, depends_on: p.packet.depends_on })),
          ...(stage.kind === "verify" ? { verdict: result?.verdict ?? null, reasons: result?.reasons ?? [] } : {}),
        }
      : { stage_id: stageId, status: "failed", error: outcome.error };

  const moved = await mutateRound(db, roundId, `end:${stageId}`, now, (s) => {
    const t = onStageEnd(s, ev, stageIds);
    if (t.state === s) return null;
    const statements: BatchItem<"sqlite">[] = [
      outcome.status === "completed"
        ? roundEvent(
            db,
            s,
            "team_stage_completed",
            {
              stage_id: stageId,
              stage: stage.kind,
              role: stage.role,
              packets: ev.status === "completed" ? ev.packets.map((p) => p.packet_id) : [],
              evidence_grade: grade,
            },
            now,
          )
        : roundEvent(
            db,
            s,
            "team_stage_failed",
            {
              stage_id: stageId,
              stage: stage.kind,
              role: stage.role,
              runtime: role.runtime,
              model: role.model,
              error: outcome.error,
              reason: "team_stage_failed",
            },
            now,
          ),
    ];
    if (t.ended) statements.push(...endStatements(db, t.state, now));
    return { state: t.state, statements, result: t };
  });

  const released = await getTeamAdmission(env).release({ ticket_id: stageId, limits: admissionLimits(ctx.limits), now: now.getTime() });
  await launchPromoted(env, released.promoted, now);
  if (!moved) return;
  await launchStages(env, roundId, moved.result.launch, now);
  if (moved.result.ended) await finishRound(env, moved.state, ctx, now);
}

function endStatements(db: Db, state: RoundState, now: Date): BatchItem<"sqlite">[] {
  return [
    revokeRoundMemberTokens(db, state.round_id, now),
    roundEvent(
      db,
      state,
      `team_round_${state.phase}`,
      {
        outcome: state.outcome ?? null,
        verdict: state.verdict ?? null,
        verdict_source: state.verdict_source ?? null,
        repaired: state.repaired ?? false,
        degrade_steps: state.degrade_steps,
        absorbed_failures: state.absorbed_failures ?? [],
      },
      now,
      `team_round_end:${state.round_id}`,
    ),
  ];
}

/**
 * After a round ended in any way: its stage jobs no runner has taken yet are withdrawn from the inbox
 * (`dead`, `round_ended`; their stages are recorded through the owner call like any other end), its
 * queued spawns are purged, its slots and unused budget freed.
 */
async function finishRound(env: Env, state: RoundState, ctx: RoundContext, now: Date) {
  await getRunnerInbox(env).withdraw({
    owner: { kind: "team_round", id: state.round_id },
    error: { code: "round_ended", message: `round ${state.round_no} ended (${state.phase}) before a runner took this stage` },
    now: now.getTime(),
  });
  const out = await getTeamAdmission(env).finishRound({
    round_id: state.round_id,
    limits: admissionLimits(ctx.limits),
    now: now.getTime(),
  });
  await getTaskBudget(env, state.task_id).closeRound({ round: state.round_no });
  await launchPromoted(env, out.promoted, now);
  // The goal task settles with its round (the team tick catches up if this is cut short).
  await settleTaskForRound(getDb(env.DB), state, now);
}

/**
 * Re-runs the end-of-round release for rounds that ended but still hold scaffold tickets (the
 * process stopped between the round's last write and its release). Idempotent.
 */
export async function releaseEndedRounds(env: Env, now: Date): Promise<number> {
  const db = getDb(env.DB);
  const status = await getTeamAdmission(env).status();
  const roundIds = [...new Set([...status.active, ...status.queued].map((t) => t.round_id))];
  let released = 0;
  for (const roundId of roundIds) {
    const row = await findRound(db, roundId);
    if (!row || !TERMINAL_PHASES.has(row.phase as RoundState["phase"])) continue;
    await finishRound(env, stateOf(row), await loadContext(db, row.taskId), now);
    released++;
  }
  return released;
}

/** Ends a live round from outside its stages (an operator's stop, a failed re-check between rounds). */
export async function abortTeamRound(env: Env, roundId: string, outcome: NonNullable<RoundState["outcome"]>, now: Date) {
  const db = getDb(env.DB);
  const row = await findRound(db, roundId);
  if (!row) throw new AppError("not_found", `round ${roundId} not found`);
  const ctx = await loadContext(db, row.taskId);
  const moved = await mutateRound(db, roundId, "abort", now, (s) => {
    const t = abortRound(s, outcome);
    return t.ended ? { state: t.state, statements: endStatements(db, t.state, now), result: t } : null;
  });
  if (moved) await finishRound(env, moved.state, ctx, now);
  return moved?.state ?? stateOf(row);
}
