import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getDb, type Db } from "../db/client";
import { jobs, tasks, teamRounds } from "../db/schema";
import { withdrawEverywhere } from "../jobs/inbox-routing";
import { getTaskBudget } from "../durable-objects/task-budget-rpc";
import { getTeamAdmission, type AdmittedTicket } from "../durable-objects/team-admission-rpc";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { AppError } from "../lib/errors";
import { goalNoticeStatement, type GoalNotice } from "../conversations/notices";
import { appendEventWhere, rowsChanged } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import type { JobError } from "../jobs/payloads";
import { dispatchJob, prepareJob, REDACTED_SECRET, type NewJob, type PreparedJob } from "../jobs/submit";
import { mintEmployeeToken, revokeEmployeeToken } from "../jobs/employee-token";
import { bestRound, type JudgedRound } from "./acceptance";
import { isMemberStage, type DegradeStep, type MemberStageKind, type RoundPlan } from "./budget";
import {
  abortRound,
  beginRound,
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
import { goalsConfig } from "./goals-config";
import { roundProgressLine } from "./progress";
import { judgeRound, loopStageJob } from "./loop-stage";
import { mintMemberToken, revokeRoundMemberTokens } from "./member-token";
import { roleTeamWindow, ROLE_TEAM_WINDOW_MS } from "./rate";
import { findRound, insertRound, listRounds, mutateRound, stateOf } from "./round-store";
import { findTeamSpec } from "./spec-store";
import {
  admissionLimits,
  loadContext,
  memberRole,
  OUTPUT_LEG,
  roundEvent,
  roundEventOf,
  stageIds,
  stageRequest,
  TOKEN_TTL_MS,
  type RoundContext,
} from "./stage-request";
import type { TaskPacket } from "./packet";
import type { TeamRole } from "./settings";
import type { TeamStagePayload, TeamStageResult } from "../jobs/team-stage-job";
import { recheckFrozenSpec, type TeamSpec } from "./validate";

/**
 * Drives rounds through the real pieces: it asks the pure composer what to do, and does it (leg
 * reads, the TaskBudget and TeamAdmission objects, member tokens, runner jobs through the dispatch
 * queue, the role ledger, events). Every step is safe to repeat: stage launches and ends are keyed
 * by stage id and applied through the round's version lock. What happens after a round ends (the
 * task settles, or the next round starts) is the goal loop's (goal-loop.ts), which calls in here.
 */
export type StartRoundResult = { state: RoundState };

/** A round the loop asked for but could not start now (it tries again when a slot frees, or on its tick). */
export type RoundNotStarted = { waiting: true; reason: "max_concurrent" | "task_not_assigned" | "round_in_progress" | "raced" };

export interface StartRoundInput {
  taskId: string;
  /** What the loop wants: a team round (gray: decided by the first plan), or the employee's own run. */
  mode: "team" | "gray" | "solo";
  /** The loop's per-employee limit on rounds in flight; absent for a round started from code. */
  slot?: { employeeId: string; maxConcurrent: number };
}

/** `team_round_*` events for rounds of members, `goal_round_*` for the employee's own. */
export const roundPrefix = (state: Pick<RoundState, "mode">) => (state.mode === "solo" ? "goal" : "team");

/**
 * Starts the task's next round. A team round re-checks the frozen spec (rules 2 and 3) before any
 * spawn is spent and plans itself against the task's budget (degrading along the chain; a first
 * round the budget cannot fund even fully degraded runs solo, seed 002 rule 3; a later one parks the
 * task in needs_human "budget exhausted" with the best round so far), then launches its planner. A
 * solo round launches the employee's own run.
 */
export async function startRound(env: Env, input: StartRoundInput, now: Date): Promise<StartRoundResult | RoundNotStarted> {
  const db = getDb(env.DB);
  const { taskId } = input;
  const previous = (await listRounds(db, taskId)).map(stateOf);
  if (previous.some((r) => !TERMINAL_PHASES.has(r.phase))) return { waiting: true, reason: "round_in_progress" };
  if (input.slot && (await liveRoundsOf(db, input.slot.employeeId)) >= input.slot.maxConcurrent)
    return { waiting: true, reason: "max_concurrent" };
  const roundNo = previous.length + 1;
  const roundId = newId("trnd");
  let mode = input.mode;
  let solo_reason: string | undefined;
  let plan: RoundPlan | undefined;
  let steps: DegradeStep[] = [];
  let notice: GoalNotice | undefined;
  const events: { type: string; payload: Record<string, unknown> }[] = [];

  if (mode !== "solo") {
    const specRow = await findTeamSpec(db, taskId);
    if (!specRow?.spec) throw new AppError("conflict", `task ${taskId} has no frozen team spec`);
    const spec = specRow.spec as unknown as TeamSpec;
    const check = recheckFrozenSpec(spec);
    if (!check.ok) {
      const state: RoundState = {
        round_id: roundId,
        task_id: taskId,
        round_no: roundNo,
        mode,
        phase: "failed",
        degrade_steps: [],
        stages: [],
        outcome: { status: "failed", reason: check.reason, detail: check.message },
      };
      const out = await createRound(
        db,
        state,
        [{ type: "team_round_failed", payload: { reason: check.reason, role: check.role, message: check.message } }],
        now,
        input.slot,
      );
      return out === "created" ? { state } : { waiting: true, reason: out };
    }
    const limits = await readTeamLimits(db);
    const want = { planner: true, executors: spec.executor_fanout, repair: true, utility: true };
    const planned = await getTaskBudget(env, taskId).planRound({ round: roundNo, want, limits: limits.team_budget, now: now.getTime() });
    if (planned.ok) {
      plan = planned.plan;
      steps = planned.steps;
      const progress = await roundProgress(db, taskId, roundId, roundNo);
      notice = progress.notice;
      // Rules 2 and 3 held for this round: said on every team round, not only when they fail.
      events.push({
        type: "team_round_started",
        payload: {
          mode,
          plan: planned.plan,
          cost: planned.cost,
          degrade_steps: planned.steps,
          spec_recheck: "ok",
          progress: progress.record,
        },
      });
      if (planned.steps.length)
        events.push({ type: "team_budget_degraded", payload: { steps: planned.steps, remaining_before: planned.remaining_before } });
    } else if (roundNo === 1 && !specRow.goal.workspace) {
      // Seed 002 rule 3: a budget that cannot fund even a fully degraded first round means no team,
      // not a human wait for work that never started. Not for a round in an isolated workspace (an
      // eval arm): the employee's own run works in its real workspace, so such a round stops instead.
      mode = "solo";
      solo_reason = "budget_cannot_fund_round";
      events.push({ type: "team_budget_solo", payload: { detail: planned.detail, steps: planned.steps } });
    } else {
      const best = bestRound(previous.map(judgedRound));
      const state: RoundState = {
        round_id: roundId,
        task_id: taskId,
        round_no: roundNo,
        mode,
        phase: "needs_human",
        plan: { ...want, verifier: true },
        degrade_steps: planned.steps,
        stages: [],
        outcome: { status: "needs_human", reason: "budget_exhausted", detail: planned.detail, pause_class: "budget_exhausted" },
      };
      const out = await createRound(
        db,
        state,
        [{ type: "team_budget_exhausted", payload: { steps: planned.steps, detail: planned.detail, best_round: best ?? null } }],
        now,
        input.slot,
      );
      return out === "created" ? { state } : { waiting: true, reason: out };
    }
  }

  const base = { round_id: roundId, task_id: taskId, round_no: roundNo, mode, degrade_steps: steps };
  const t = beginRound({ ...base, ...(plan ? { plan } : {}), ...(solo_reason ? { solo_reason } : {}) }, stageIds);
  if (mode === "solo") events.push({ type: "goal_round_started", payload: { mode, ...(solo_reason ? { solo_reason } : {}) } });
  const out = await createRound(db, t.state, events, now, input.slot, notice);
  if (out !== "created") return { waiting: true, reason: out };
  await launchStages(env, roundId, t.launch, now);
  return { state: (await findRound(db, roundId).then((r) => r && stateOf(r))) ?? t.state };
}

/**
 * Starts a team round for a task whose gate said team or gray, as the goal request did before the
 * loop existed; kept for code that starts one round directly. Refuses with 409 what the loop would
 * not do: a second round in flight, a task without a frozen spec, a gate that said solo.
 */
export async function startTeamRound(env: Env, taskId: string, now: Date): Promise<StartRoundResult> {
  const db = getDb(env.DB);
  const specRow = await findTeamSpec(db, taskId);
  if (!specRow?.spec) throw new AppError("conflict", `task ${taskId} has no frozen team spec`);
  const gate = (specRow.gate ?? {}) as { decision?: string };
  const previous = (await listRounds(db, taskId)).map(stateOf);
  if (previous.some((r) => !TERMINAL_PHASES.has(r.phase))) throw new AppError("conflict", `task ${taskId} already has a round in progress`);
  if (gate.decision !== "team" && gate.decision !== "gray")
    throw new AppError("conflict", `task ${taskId}'s gate decided ${gate.decision ?? "nothing"}`);
  const mode = gate.decision === "gray" && previous.length === 0 ? "gray" : "team";
  const out = await startRound(env, { taskId, mode }, now);
  if ("waiting" in out) throw new AppError("conflict", `task ${taskId}: round not started (${out.reason})`);
  return out;
}

/**
 * Seed 002: a team round's start sends the conversation the task came from one progress line, its
 * estimate the `[goals]` progress interval times the 3 required stages. The line is keyed by the
 * round, and lands in the round's own batch: a repeated start (a redelivered message, a tick racing
 * the queue) finds the round in flight or loses on its unique key, and posts nothing. A task with no
 * conversation gets the estimate on the `team_round_started` event only.
 */
async function roundProgress(db: Db, taskId: string, roundId: string, roundNo: number) {
  const [task, loop] = await Promise.all([
    db.select({ title: tasks.title, conversationId: tasks.originConversationId }).from(tasks).where(eq(tasks.id, taskId)).get(),
    readSection(db, goalsConfig),
  ]);
  const line = roundProgressLine({ title: task?.title ?? taskId, roundNo, intervalMinutes: loop.progress_interval_minutes });
  const conversationId = task?.conversationId ?? null;
  const record = {
    estimate_minutes: line.estimate_minutes,
    interval_minutes: line.interval_minutes,
    stages: line.stages,
    conversation_id: conversationId,
  };
  const notice: GoalNotice | undefined = conversationId
    ? { conversationId, taskId, roundId, key: `round_started:${roundId}`, content: line.text }
    : undefined;
  return { record, notice };
}

/** What the acceptance path's best-round choice reads of a round. */
export function judgedRound(r: RoundState): JudgedRound {
  return {
    round_id: r.round_id,
    round_no: r.round_no,
    ...(r.evaluation ? { evaluation: r.evaluation } : {}),
    ...(r.verdict ? { verdict: r.verdict } : {}),
    ...(r.repaired ? { repaired: r.repaired } : {}),
    executors_completed: r.stages.filter((s) => s.kind === "execute" && s.status === "completed").length,
  };
}

/** Rounds in flight for the employee's tasks (the loop's `max_concurrent`). */
async function liveRoundsOf(db: Db, employeeId: string): Promise<number> {
  const row = await db.get<{ n: number }>(sql`SELECT (${liveRoundsSql(employeeId)}) AS n`);
  return row?.n ?? 0;
}

function liveRoundsSql(employeeId: string) {
  const terminal = sql.join(
    [...TERMINAL_PHASES].map((p) => sql`${p}`),
    sql`, `,
  );
  return sql`SELECT COUNT(*) FROM ${teamRounds} r JOIN ${tasks} t ON t.id = r.task_id
    WHERE t.assigned_to = ${employeeId} AND r.phase NOT IN (${terminal})`;
}

/**
 * Creates a round with its events in one batch. With a slot, the batch is guarded: it lands only
 * while the task is still assigned and the employee has fewer than `maxConcurrent` rounds in flight,
 * so racing starts for one employee never exceed the limit. A concurrent start of the same round
 * number loses on the unique key.
 */
async function createRound(
  db: Db,
  state: RoundState,
  events: readonly { type: string; payload: Record<string, unknown> }[],
  now: Date,
  slot?: StartRoundInput["slot"],
  /** The progress line for the task's conversation: it lands with the round or not at all, once per round. */
  notice?: GoalNotice,
): Promise<"created" | RoundNotStarted["reason"]> {
  const guard = slot
    ? sql`EXISTS (SELECT 1 FROM ${tasks} WHERE ${tasks.id} = ${state.task_id} AND ${tasks.status} = 'assigned')
        AND (${liveRoundsSql(slot.employeeId)}) < ${slot.maxConcurrent}`
    : undefined;
  const landed = sql`EXISTS (SELECT 1 FROM ${teamRounds} WHERE ${teamRounds.id} = ${state.round_id})`;
  const rows = insertRound(db, state, now, guard);
  const statements: BatchItem<"sqlite">[] = [
    ...rows,
    ...events.map((e) =>
      guard ? appendEventWhere(db, roundEventOf(state, e.type, e.payload), now, landed) : roundEvent(db, state, e.type, e.payload, now),
    ),
    ...(notice ? [goalNoticeStatement(db, notice, now, guard ? landed : undefined)] : []),
  ];
  try {
    const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    if (!guard || rowsChanged(results[1]) > 0) return "created";
  } catch (err) {
    if (causeChainText(err).includes("UNIQUE constraint failed: team_round")) return "raced";
    throw err;
  }
  const task = await db.select({ status: tasks.status }).from(tasks).where(eq(tasks.id, state.task_id)).get();
  return task?.status === "assigned" ? "max_concurrent" : "task_not_assigned";
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
  if (!isMemberStage(stage.kind)) return launchLoopStage(env, state, stage, ctx, now);

  // The request is checked whole before it may wait for a slot or spend a spawn: an invalid one is
  // refused, never queued (retrying could not make it valid).
  const draft = await stageRequest(db, state, stage, ctx, now);
  if (!draft) {
    await failStage(env, roundId, stageId, "invalid_stage_request", "the stage's job would not be a valid team_stage payload", now);
    return false;
  }
  // One step per admission check, in this order; each says whether the launch goes on.
  const window = roleTeamWindow(env);
  if (!(await withinRoleTeamWindow(window, ctx, stageId, now))) return false;
  if (!(await admitToScaffolds(env, state, stage, ctx, now))) return false;
  if (!(await chargeSpawn(env, state, stage, stage.kind, ctx, now))) return false;
  return dispatchMemberStage(env, state, stage, ctx, draft, window !== null, now);
}

function failStage(env: Env, roundId: string, stageId: string, code: string, message: string, now: Date) {
  return endStage(env, roundId, stageId, { status: "failed", error: { code, message } }, now);
}

/** The employee's role-member spawns per window: over the limit, the stage stays pending and the team tick retries it. */
async function withinRoleTeamWindow(
  window: ReturnType<typeof roleTeamWindow>,
  ctx: RoundContext,
  stageId: string,
  now: Date,
): Promise<boolean> {
  if (!window) return true;
  const rate = await window.tryAcquire({
    key: `role_team:${ctx.employeeId}`,
    limit: ctx.limits.role_team_max_in_window,
    windowMs: ROLE_TEAM_WINDOW_MS,
    now: now.getTime(),
    token: stageId,
  });
  return rate.ok;
}

/** A scaffold slot, fleet-wide: full → the stage waits for admission (visibly); refused or expired → it fails. */
async function admitToScaffolds(env: Env, state: RoundState, stage: StageRecord, ctx: RoundContext, now: Date): Promise<boolean> {
  const db = getDb(env.DB);
  const { round_id: roundId } = state;
  const stageId = stage.stage_id;
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
    const code = admission.reason === "expired" ? "admission_expired" : "admission_refused";
    await failStage(env, roundId, stageId, code, `scaffold admission: ${admission.reason}`, now);
    return false;
  }
  return true;
}

/** One spawn from the task's budget (TaskBudget); none left → the stage fails with `budget_exhausted`. */
async function chargeSpawn(
  env: Env,
  state: RoundState,
  stage: StageRecord,
  kind: MemberStageKind,
  ctx: RoundContext,
  now: Date,
): Promise<boolean> {
  const charge = await getTaskBudget(env, state.task_id).charge({
    stage_key: stage.stage_id,
    kind,
    round: state.round_no,
    limits: ctx.limits.team_budget,
    now: now.getTime(),
  });
  if (charge.granted) return true;
  await failStage(env, state.round_id, stage.stage_id, "budget_exhausted", "no spawn left in the task's budget", now);
  return false;
}

/**
 * The member token and the runner job land together with the stage's `dispatched` mark, then the
 * job goes to the dispatch queue. True when this call dispatched it.
 */
async function dispatchMemberStage(
  env: Env,
  state: RoundState,
  stage: StageRecord,
  ctx: RoundContext,
  draft: NonNullable<Awaited<ReturnType<typeof stageRequest>>>,
  rateWindowed: boolean,
  now: Date,
): Promise<boolean> {
  const db = getDb(env.DB);
  const { round_id: roundId } = state;
  const stageId = stage.stage_id;
  const role = memberRole(ctx, stage);
  const expiresAt = new Date(now.getTime() + TOKEN_TTL_MS);
  const token = await mintMemberToken(
    db,
    {
      kind: "team_stage",
      task_id: state.task_id,
      round: state.round_no,
      round_id: roundId,
      role: stage.role as TeamRole,
      stage_id: stageId,
    },
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
            rate_window: rateWindowed ? "role_team" : "absent",
          },
          now,
        ),
      ],
      result: true,
    };
  });
  if (!launched) return false;
  return sendStageJob(env, roundId, stageId, prepared, now);
}

/**
 * A loop stage (the employee's run, the evaluator): its job lands with the stage's `dispatched` mark,
 * then goes to the dispatch queue. The offline evaluator runs no job: its stage fails at once with
 * the reason, and the round parks for a human.
 */
async function launchLoopStage(env: Env, state: RoundState, stage: StageRecord, ctx: RoundContext, now: Date): Promise<boolean> {
  const db = getDb(env.DB);
  const roundId = state.round_id;
  const stageId = stage.stage_id;
  const job = await loopStageJob(db, state, stage, ctx, now);
  if (!job || job.kind === "none") {
    const error = job?.error ?? { code: "invalid_stage_request", message: `the ${stage.kind} stage's job could not be built` };
    await endStage(env, roundId, stageId, { status: "failed", error }, now);
    return false;
  }
  const jobId = newId("job");
  // The employee's own run acts with its own short-lived token (its MCP tools); the row never keeps it.
  const token =
    job.kind === "employee_turn"
      ? await mintEmployeeToken(
          db,
          { employee_id: job.payload.employee_id, job_id: jobId },
          new Date(now.getTime() + job.payload.timeout_ms * 3 + 10 * 60_000),
          now,
        )
      : undefined;
  const payload =
    job.kind === "employee_turn" && token
      ? {
          ...job.payload,
          employee_token: token.token,
          employee_token_expires_at: new Date(now.getTime() + job.payload.timeout_ms * 3 + 10 * 60_000).toISOString(),
        }
      : job.payload;
  const prepared = prepareJob(db, { kind: job.kind, payload, owner: { kind: "team_round", id: roundId } } as NewJob, now, jobId, {
    ...(token ? { rowPayload: { ...payload, employee_token: REDACTED_SECRET } } : {}),
  });
  const launched = await mutateRound(db, roundId, `dispatch:${stageId}`, now, (s) => {
    const st = s.stages.find((x) => x.stage_id === stageId);
    if (TERMINAL_PHASES.has(s.phase) || st?.status !== "pending") return null;
    return {
      state: markStage(s, stageId, { status: "dispatched", job_id: prepared.jobId, runtime: job.runtime, model: job.model }),
      statements: [
        ...(token ? [token.insert] : []),
        ...prepared.statements,
        roundEvent(
          db,
          s,
          "goal_stage_dispatched",
          { stage_id: stageId, stage: stage.kind, role: stage.role, runtime: job.runtime, model: job.model, job_id: prepared.jobId },
          now,
        ),
      ],
      result: true,
    };
  });
  if (!launched) return false;
  return sendStageJob(env, roundId, stageId, prepared, now);
}

/** Hands a recorded stage job to the dispatch queue; a refusal kills the job and fails the stage, visibly. */
async function sendStageJob(env: Env, roundId: string, stageId: string, prepared: PreparedJob, now: Date): Promise<boolean> {
  try {
    await dispatchJob(env, prepared.message);
    return true;
  } catch (err) {
    console.error(`team: stage ${stageId} could not be queued`, err);
    await getDb(env.DB)
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
  const member = isMemberStage(stage.kind);
  const recorded = member
    ? await recordMemberEnd(db, state, stage, ctx, outcome, now)
    : await recordLoopEnd(db, state, stage, ctx, outcome, now);

  const moved = await mutateRound(db, roundId, `end:${stageId}`, now, (s) => {
    const t = onStageEnd(s, recorded.ev, stageIds);
    if (t.state === s) return null;
    const statements: BatchItem<"sqlite">[] = [recorded.event(s)];
    if (t.ended) statements.push(...endStatements(db, t.state, now));
    return { state: t.state, statements, result: t };
  });

  if (member) {
    const released = await getTeamAdmission(env).release({ ticket_id: stageId, limits: admissionLimits(ctx.limits), now: now.getTime() });
    await launchPromoted(env, released.promoted, now);
  }
  if (!moved) return;
  await launchStages(env, roundId, moved.result.launch, now);
  if (moved.result.ended) await finishRound(env, moved.state, ctx, now);
}

interface RecordedEnd {
  ev: StageEnd;
  /** The stage's completed/failed event, for the batch that moves the round. */
  event: (s: RoundState) => BatchItem<"sqlite">;
}

/**
 * A member stage ended: the ledger row, the fidelity and artifact-hash corrections of its own
 * packets (and their audits), and the composer's view of its end.
 */
async function recordMemberEnd(
  db: Db,
  state: RoundState,
  stage: StageRecord,
  ctx: RoundContext,
  outcome: StageOutcome,
  now: Date,
): Promise<RecordedEnd> {
  const stageId = stage.stage_id;
  const role = memberRole(ctx, stage);
  const legPair = OUTPUT_LEG[stage.kind];
  const leg: LegRef | undefined = legPair
    ? { taskId: state.task_id, roundNo: state.round_no, from: legPair[0], to: legPair[1] }
    : undefined;

  const result = outcome.status === "completed" ? outcome.result : undefined;
  // A failed stage says what ran only when something was spawned; otherwise these stay empty.
  const ran = outcome.status === "failed" ? outcome.ran : undefined;
  const grade = evidenceGrade(result?.evidence);
  const own = outcome.status === "completed" && leg ? (await loadLeg(db, leg, now)).packets.filter((p) => p.writtenBy === stageId) : [];

  // The member's claimed fidelity is overwritten by what was observed, and the mismatch audited; an
  // artifact declared without a hash gets the one its receipt observed (a wrong declared hash is kept
  // as declared: the receipt and its audit row say mismatch, the packet is never quietly corrected).
  const corrections: BatchItem<"sqlite">[] = [];
  if (leg && (stage.kind === "execute" || stage.kind === "repair")) {
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

  await appendRoleTurn(
    db,
    {
      ...ledgerFigures(outcome),
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
      config_fingerprint_hard: await configFingerprintHard(stage.role, role.runtime, role.model),
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
  const event = (s: RoundState) =>
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
        );
  return { ev, event };
}

/** The ledger's figures of a stage's outcome: evidence grade, usage, cost, failure edge. */
function ledgerFigures(outcome: StageOutcome) {
  const result = outcome.status === "completed" ? outcome.result : undefined;
  const usage = sumUsageLegs(result?.legs ? result.legs.map((l) => l.usage) : [result?.usage]);
  const failure = outcome.status === "failed" ? classifyFailure(outcome.error.code) : null;
  return {
    evidence_grade: evidenceGrade(result?.evidence),
    outcome: outcome.status,
    failure_edge: failure?.failure_edge ?? null,
    fault_side: failure?.fault_side ?? null,
    ...usage,
    ...(result?.cost_usd !== undefined ? { cost_usd: result.cost_usd } : {}),
  };
}

/**
 * A loop stage ended: the ledger row (the employee's run and the evaluator are attributed like any
 * role, so spend per role covers them) and, for the evaluator, the acceptance path's judgement.
 */
async function recordLoopEnd(
  db: Db,
  state: RoundState,
  stage: StageRecord,
  ctx: RoundContext,
  outcome: StageOutcome,
  now: Date,
): Promise<RecordedEnd> {
  const stageId = stage.stage_id;
  const result = outcome.status === "completed" ? outcome.result : undefined;
  const ran = outcome.status === "failed" ? outcome.ran : undefined;
  const requested = { runtime: stage.runtime ?? "offline", model: stage.model ?? "offline" };
  // The employee's run is over: its token stops working now.
  if (stage.kind === "work" && stage.job_id) await revokeEmployeeToken(db, stage.job_id, now);
  await appendRoleTurn(
    db,
    {
      ...ledgerFigures(outcome),
      task_id: state.task_id,
      round: state.round_no,
      role: stage.role,
      stage: stage.kind,
      stage_id: stageId,
      job_id: stage.job_id ?? null,
      requested_runtime: requested.runtime,
      request_model: requested.model,
      runtime_used: result?.runtime ?? ran?.runtime ?? null,
      response_model: result?.model ?? ran?.model ?? null,
      provider: result?.provider ?? ran?.provider ?? null,
      packets: [],
      config_fingerprint_hard: await configFingerprintHard(stage.role, requested.runtime, requested.model),
    },
    now,
  );
  if (outcome.status === "failed") {
    const ev: StageEnd = { stage_id: stageId, status: "failed", error: outcome.error };
    const event = (s: RoundState) =>
      roundEvent(
        db,
        s,
        "goal_stage_failed",
        { stage_id: stageId, stage: stage.kind, role: stage.role, ...requested, error: outcome.error },
        now,
      );
    return { ev, event };
  }
  if (stage.kind === "evaluate") {
    const evaluation = await judgeRound(state, ctx.goal, result as Record<string, unknown> | undefined);
    const ev: StageEnd = { stage_id: stageId, status: "completed", packets: [], evaluation };
    const event = (s: RoundState) =>
      roundEvent(
        db,
        s,
        "goal_round_evaluated",
        {
          stage_id: stageId,
          source: evaluation.source,
          ...(evaluation.unparseable_reason ? { unparseable_reason: evaluation.unparseable_reason } : {}),
          accepted: evaluation.accepted,
          stage_one: evaluation.stage_one,
          met: evaluation.criteria.filter((c) => c.met).length,
          of: evaluation.criteria.length,
          unmet: evaluation.unmet,
          fingerprint: evaluation.fingerprint,
        },
        now,
      );
    return { ev, event };
  }
  const receipts = result?.artifact_receipts ?? [];
  const ev: StageEnd = { stage_id: stageId, status: "completed", packets: [] };
  const event = (s: RoundState) =>
    roundEvent(
      db,
      s,
      "goal_stage_completed",
      {
        stage_id: stageId,
        stage: stage.kind,
        role: stage.role,
        runtime_used: result?.runtime ?? null,
        artifacts: receipts.map((r) => ({ path: r.path, state: r.state })),
      },
      now,
    );
  return { ev, event };
}

function endStatements(db: Db, state: RoundState, now: Date): BatchItem<"sqlite">[] {
  return [
    revokeRoundMemberTokens(db, state.round_id, now),
    roundEvent(
      db,
      state,
      `${roundPrefix(state)}_round_${state.phase}`,
      {
        outcome: state.outcome ?? null,
        verdict: state.verdict ?? null,
        verdict_source: state.verdict_source ?? null,
        repaired: state.repaired ?? false,
        degrade_steps: state.degrade_steps,
        absorbed_failures: state.absorbed_failures ?? [],
        ...(state.evaluation ? { unmet: state.evaluation.unmet, fingerprint: state.evaluation.fingerprint } : {}),
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
  await withdrawEverywhere(env, {
    owner: { kind: "team_round", id: state.round_id },
    error: { code: "round_ended", message: `round ${state.round_no} ended (${state.phase}) before a runner took this stage` },
    now: now.getTime(),
  });
  // A solo round spawned no member: it holds no scaffold ticket and no part of a spawn budget.
  if (!state.stages.some((s) => isMemberStage(s.kind))) return;
  const out = await getTeamAdmission(env).finishRound({
    round_id: state.round_id,
    limits: admissionLimits(ctx.limits),
    now: now.getTime(),
  });
  if (state.plan) await getTaskBudget(env, state.task_id).closeRound({ round: state.round_no });
  await launchPromoted(env, out.promoted, now);
  // What follows the round (the task settles, or the next round starts) is the goal loop's.
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
