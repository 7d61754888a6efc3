import { inArray } from "drizzle-orm";
import type { Db } from "../db/client";
import { jobs, type EmployeeRow } from "../db/schema";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { findEmployee } from "../tasks/employees";
import { DEFAULT_ALLOWED_TOOLS } from "../jobs/default-tools";
import { findTask } from "../tasks/view";
import { soulForEmployeeRun } from "../evolution/soul-run";
import type { MemberStageKind, StageKind } from "./budget";
import type { RoundState, StageRecord } from "./composer";
import { effortForRuntime } from "./effort";
import { loadLeg, type LegRef } from "./legs";
import { readTeamLimits, type TeamLimits } from "./limits";
import type { TaskPacket } from "./packet";
import { newProtectedMarker } from "./render";
import type { TeamRole } from "./settings";
import { findTeamSpec, type FrozenGoal } from "./spec-store";
import { executePrompt, planPrompt, repairPrompt, synthesizePrompt, verifyPrompt, type StageContext } from "./stage-input";
import { frozenCriteria } from "./acceptance";
import { listRounds, stateOf } from "./round-store";
import { teamStagePayload, teamStageResult, type TeamStagePayload, type TeamStageResult } from "../jobs/team-stage-job";
import type { TeamSpec } from "./validate";

/**
 * What the round driver needs around a stage: the task's frozen context, and the stage's job request
 * (its prompt built from the legs it reads, checked whole against the team_stage schema).
 */
export interface RoundContext {
  /** The frozen team spec; absent for a task that never formed a team (its rounds are solo). */
  spec?: TeamSpec;
  goal: FrozenGoal;
  employeeId: string;
  limits: TeamLimits;
  /** The employee's registry row, when the employee exists (a round started from code may have none). */
  employee?: EmployeeRow;
}

export const STAGE_TIMEOUT_MS = 30 * 60_000;
const MAX_JOB_ATTEMPTS = 3;
/** A member token outlives every attempt of its stage and is revoked the moment the round ends. */
export const TOKEN_TTL_MS = STAGE_TIMEOUT_MS * MAX_JOB_ATTEMPTS + 10 * 60_000;

/** The leg a member stage hands its packets off on; the utility's synthesis is its text, not packets. */
export const OUTPUT_LEG: Partial<Record<StageKind, [TeamRole, TeamRole]>> = {
  plan: ["planner", "executor"],
  execute: ["executor", "verifier"],
  repair: ["executor", "verifier"],
  verify: ["verifier", "executor"],
};

export const stageIds = () => newId("stg");

export async function loadContext(db: Db, taskId: string): Promise<RoundContext> {
  const limits = await readTeamLimits(db);
  const row = await findTeamSpec(db, taskId);
  if (row) {
    const employee = await findEmployee(db, row.employeeId);
    return {
      ...(row.spec ? { spec: row.spec as unknown as TeamSpec } : {}),
      goal: row.goal,
      employeeId: row.employeeId,
      limits,
      ...(employee ? { employee } : {}),
    };
  }
  // A solo task: its frozen goal is the task row's (title and criteria are never changed after creation).
  const task = await findTask(db, taskId);
  if (!task) throw new AppError("conflict", `task ${taskId} has neither a task row nor a frozen team spec`);
  const employee = await findEmployee(db, task.assignedTo);
  return {
    goal: { title: task.title, acceptance_criteria: task.acceptanceCriteria },
    employeeId: task.assignedTo,
    limits,
    ...(employee ? { employee } : {}),
  };
}

/** The frozen spec's binding for a member stage's role; a member stage without a spec is a bug. */
export function memberRole(ctx: RoundContext, stage: StageRecord) {
  const role = ctx.spec?.roles[stage.role as TeamRole];
  if (!role) throw new AppError("conflict", `stage ${stage.stage_id} (${stage.role}) has no frozen team role`);
  return role;
}

export const admissionLimits = (l: TeamLimits) => ({
  max_active: l.ephemeral_max_active,
  max_depth: l.ephemeral_queue_max_depth,
  ttl_ms: l.ephemeral_queue_ttl_ms,
});

/** A round's event as recorded: subject the task, payload with the task, round id and number. */
export function roundEventOf(
  state: Pick<RoundState, "task_id" | "round_id" | "round_no">,
  type: string,
  payload: Record<string, unknown>,
  dedupe?: string,
) {
  return {
    type,
    subject: state.task_id,
    payload: { task_id: state.task_id, round_id: state.round_id, round: state.round_no, ...payload },
    ...(dedupe ? { dedupeKey: dedupe } : {}),
  };
}

export function roundEvent(db: Db, state: RoundState, type: string, payload: Record<string, unknown>, now: Date, dedupe?: string) {
  return appendEvent(db, roundEventOf(state, type, payload, dedupe), now);
}

/** Packets of one leg by id, in slot order. */
async function packetsById(db: Db, leg: LegRef, ids: readonly string[], now: Date): Promise<TaskPacket[]> {
  const read = await loadLeg(db, leg, now);
  const want = new Set(ids);
  return read.packets.filter((p) => want.has(p.packet.packet_id)).map((p) => p.packet);
}

export async function stageResults(db: Db, stages: readonly StageRecord[]): Promise<(TeamStageResult | undefined)[]> {
  const jobIds = stages.flatMap((s) => (s.job_id ? [s.job_id] : []));
  const rows = jobIds.length ? await db.select({ id: jobs.id, result: jobs.result }).from(jobs).where(inArray(jobs.id, jobIds)).all() : [];
  return stages.map((s) => {
    const raw = rows.find((r) => r.id === s.job_id)?.result;
    const parsed = raw ? teamStageResult.safeParse(raw) : undefined;
    return parsed?.success ? parsed.data : undefined;
  });
}

async function stagePrompt(db: Db, state: RoundState, stage: StageRecord, ctx: StageContext, now: Date): Promise<string> {
  const leg = (from: TeamRole, to: TeamRole): LegRef => ({ taskId: state.task_id, roundNo: state.round_no, from, to });
  switch (stage.kind) {
    case "plan":
      return planPrompt(ctx);
    case "execute":
      return executePrompt(ctx, await packetsById(db, leg("planner", "executor"), stage.inputs, now));
    case "verify": {
      const executors = state.stages.filter((s) => s.kind === "execute" && s.status === "completed");
      return verifyPrompt(ctx, await packetsById(db, leg("executor", "verifier"), stage.inputs, now), await stageResults(db, executors));
    }
    case "synthesize": {
      const executors = state.stages.filter((s) => s.kind === "execute" && s.status === "completed");
      return synthesizePrompt(
        ctx,
        await packetsById(db, leg("executor", "verifier"), stage.inputs, now),
        await stageResults(db, executors),
      );
    }
    case "repair":
      return repairPrompt(
        ctx,
        await packetsById(db, leg("planner", "executor"), stage.inputs, now),
        await packetsById(db, leg("verifier", "executor"), stage.inputs, now),
        state.verdict_reasons ?? [],
      );
    case "work":
    case "evaluate":
      throw new Error(`stage ${stage.stage_id} (${stage.kind}) is not a member stage`);
  }
}

/** The previous round's unmet criteria, for a later round's planner. */
async function previousUnmet(db: Db, state: RoundState, goal: FrozenGoal) {
  if (state.round_no < 2) return [];
  const previous = (await listRounds(db, state.task_id)).map(stateOf).find((r) => r.round_no === state.round_no - 1);
  const e = previous?.evaluation;
  if (!e) return [];
  const { criteria } = frozenCriteria(goal);
  return e.criteria.filter((c) => !c.met).map((c) => ({ id: c.id, criterion: criteria[c.id - 1] ?? "", reason: c.reason }));
}

/** What the runner needs of the employee: effective tools and sandbox, and its config to copy. */
export function stageEmployee(row: EmployeeRow): NonNullable<TeamStagePayload["employee"]> {
  const capabilities = {
    allowed_tools: row.capabilities?.allowed_tools ?? DEFAULT_ALLOWED_TOOLS,
    denied_tools: row.capabilities?.denied_tools ?? [],
  };
  return {
    name: row.name,
    capabilities,
    sandbox_enabled: row.sandboxEnabled === true,
    config_json: JSON.stringify({
      ...row.config,
      name: row.name,
      runtime: row.runtime,
      model: { preferred: row.modelPreferred, ...(row.modelEffort ? { effort: row.modelEffort } : {}) },
      capabilities,
    }),
  };
}

/** The stage's job payload without its member token, or null when it would not be valid. */
export async function stageRequest(
  db: Db,
  state: RoundState,
  stage: StageRecord,
  ctx: RoundContext,
  now: Date,
): Promise<Omit<TeamStagePayload, "member_token" | "member_token_expires_at"> | null> {
  const role = memberRole(ctx, stage);
  const marker = newProtectedMarker();
  let prompt: string;
  try {
    const unmet = stage.kind === "plan" ? await previousUnmet(db, state, ctx.goal) : [];
    prompt = await stagePrompt(db, state, stage, { task_id: state.task_id, round_no: state.round_no, goal: ctx.goal, marker, unmet }, now);
  } catch (err) {
    console.error(`team: stage ${stage.stage_id} prompt could not be built`, err);
    return null;
  }
  const effort = effortForRuntime(role.runtime, role.effort);
  const draft = {
    runtime: role.runtime,
    model: role.model,
    ...(effort ? { effort: effort.level, effort_argv: effort.argv } : {}),
    role: stage.role as TeamRole,
    stage: stage.kind as MemberStageKind,
    task_id: state.task_id,
    round_id: state.round_id,
    round: state.round_no,
    stage_id: stage.stage_id,
    employee_id: ctx.employeeId,
    ...(ctx.employee ? { employee: stageEmployee(ctx.employee) } : {}),
    input: {
      prompt,
      protected_marker: marker,
      packet_ids: stage.inputs,
      ...(stage.kind === "verify" ? { output_schema: "verdict" as const } : {}),
    },
    timeout_ms: STAGE_TIMEOUT_MS,
    ...(ctx.goal.workspace ? { workspace: ctx.goal.workspace } : {}),
  };
  // A token of the real shape stands in for the one minted after admission.
  const fits = (d: typeof draft) =>
    teamStagePayload.safeParse({
      ...d,
      member_token: `mbr_${"0".repeat(16)}.${"0".repeat(64)}`,
      member_token_expires_at: new Date().toISOString(),
    }).success;
  // The member's SOUL.md carries the employee's SOUL (issue 23) when the payload still fits with it;
  // otherwise the member gets the employee's name as its identity, as before SOUL versions.
  const soul = ctx.employee ? await soulForEmployeeRun(db, ctx.employee) : undefined;
  if (soul && draft.employee) {
    const withSoul = { ...draft, employee: { ...draft.employee, soul } };
    if (fits(withSoul)) return withSoul;
    console.warn(`team: stage ${stage.stage_id} runs without the SOUL of ${ctx.employeeId} (the payload would be too large)`);
  }
  return fits(draft) ? draft : null;
}
