import type { AttachmentsRecord } from "./attachments";
import type { Evaluation } from "./acceptance";
import { STAGE_ROLE, type DegradeStep, type MemberStageKind, type RoundPlan, type StageKind } from "./budget";
import { regateOnPlan, type PlannedSubtask } from "./gate";
import type { TeamRole } from "./settings";

/**
 * The round composer as a pure state machine. A team round (seed 002 "1 ラウンド、3 段階"): plan →
 * execute (fan-out up to the planned executors, one stage per subtask packet; a failed executor gets
 * one replica) → synthesize (the utility role, when the plan keeps it) → verify → one repair pass on
 * FAIL → evaluate. A solo round: the employee's own run (`work`) → evaluate. Both end on the same
 * acceptance path (`evaluate`, acceptance.ts): the team changes who works, not who decides it is done.
 * It decides; the driver (round-driver.ts) reads legs, dispatches stages and records. A stage that
 * fails fails only itself (`team_stage_failed`): a role never moves to another vendor.
 */
export const ROUND_PHASES = [
  "planning",
  "executing",
  "synthesizing",
  "verifying",
  "repairing",
  "working",
  "evaluating",
  "accepted",
  "rejected",
  "needs_human",
  "failed",
  "cancelled",
  // Phases of rounds recorded before the acceptance path existed (read, never written now).
  "settled",
  "solo",
] as const;
export type RoundPhase = (typeof ROUND_PHASES)[number];

/** `cancelled`: the task was settled from outside (an operator) while its round still ran. */
export const TERMINAL_PHASES: ReadonlySet<RoundPhase> = new Set([
  "accepted",
  "rejected",
  "needs_human",
  "failed",
  "cancelled",
  "settled",
  "solo",
]);

export type StageStatus = "pending" | "waiting_admission" | "dispatched" | "completed" | "failed";

/** Who runs a stage: a team role's member, the employee itself (`work`), or the evaluator. */
export type StageRole = TeamRole | "employee" | "evaluator";

export interface StageRecord {
  stage_id: string;
  kind: StageKind;
  role: StageRole;
  status: StageStatus;
  /** Packet ids this stage works from (execute: its subtasks; verify: executor outputs; repair: subtasks and gaps). */
  inputs: string[];
  /** An executor stage that replaces a failed one (seed 002's replica step), with the failed stage's id. */
  replica_of?: string;
  job_id?: string;
  member_id?: string;
  /** Packet ids this stage wrote. */
  outputs?: string[];
  /** What a loop stage (work, evaluate) asked for; a member stage's is in the frozen spec. */
  runtime?: string;
  model?: string;
  error?: { code: string; message: string };
}

export interface RoundOutcome {
  status: "accepted" | "rejected" | "needs_human" | "failed" | "cancelled";
  reason: string;
  detail?: string;
  /** For needs_human: the task settle's pause class (API.md). */
  pause_class?: "no_progress" | "budget_exhausted" | "blocked_needs_decision" | "infra" | "unknown";
}

export interface RoundState {
  round_id: string;
  task_id: string;
  round_no: number;
  /** `gray`: the planner runs once and the gate is re-run on its real decomposition. `solo`: the employee's own run. */
  mode: "team" | "gray" | "solo";
  phase: RoundPhase;
  /** The spawn plan of a team or gray round; a solo round spawns no member and has none. */
  plan?: RoundPlan;
  degrade_steps: DegradeStep[];
  /** Why a round that would have been a team round runs solo (`budget_cannot_fund_round`, seed 002 rule 3). */
  solo_reason?: string;
  stages: StageRecord[];
  subtasks?: string[];
  /** A gray round's re-gate; `solo` means the round went on as the employee's own run, with the plan. */
  regate?: { decision: "team" | "solo"; independent: number };
  verdict?: "PASS" | "FAIL";
  /** `unparseable`: the verifier answered without a readable verdict, which counts as FAIL (fail closed). */
  verdict_source?: "verifier" | "unparseable";
  verdict_reasons?: string[];
  repaired?: boolean;
  /** Executor stages that failed while siblings succeeded (the replica step absorbed them). */
  absorbed_failures?: string[];
  /** The acceptance path's judgement of this round. */
  evaluation?: Evaluation;
  outcome?: RoundOutcome;
  /** An accepted team round's packet attachments archive (seed 002; src/team/attachments.ts). */
  attachments?: AttachmentsRecord;
}

export type StageEnd =
  | {
      stage_id: string;
      status: "completed";
      /** Valid packets this stage wrote on its output leg, in slot order. */
      packets: PlannedSubtask[];
      /** Verify stages: the verdict as reported, or null when it could not be read. */
      verdict?: "PASS" | "FAIL" | null;
      reasons?: string[];
      /** Evaluate stages: the acceptance path's judgement (the driver computes it from the answer). */
      evaluation?: Evaluation;
    }
  | { stage_id: string; status: "failed"; error: { code: string; message: string } };

export interface Transition {
  state: RoundState;
  /** Stages created by this step, to be launched by the driver. */
  launch: string[];
  /** True when this step moved the round into a terminal phase. */
  ended: boolean;
}

export type NewStageId = () => string;

function memberStage(ids: NewStageId, kind: MemberStageKind, inputs: string[], extra: Partial<StageRecord> = {}): StageRecord {
  return { stage_id: ids(), kind, role: STAGE_ROLE[kind], status: "pending", inputs, ...extra };
}

function workStage(ids: NewStageId, inputs: string[]): StageRecord {
  return { stage_id: ids(), kind: "work", role: "employee", status: "pending", inputs };
}

function evaluateStage(ids: NewStageId): StageRecord {
  return { stage_id: ids(), kind: "evaluate", role: "evaluator", status: "pending", inputs: [] };
}

function end(state: RoundState, outcome: RoundOutcome): Transition {
  return { state: { ...state, phase: outcome.status, outcome }, launch: [], ended: true };
}

function next(state: RoundState, phase: RoundPhase, created: StageRecord[]): Transition {
  return { state: { ...state, phase, stages: [...state.stages, ...created] }, launch: created.map((s) => s.stage_id), ended: false };
}

export interface BeginRound {
  round_id: string;
  task_id: string;
  round_no: number;
  mode: "team" | "gray" | "solo";
  plan?: RoundPlan;
  degrade_steps: DegradeStep[];
  solo_reason?: string;
}

/** A team or gray round starts with its planner; a solo round with the employee's own run. */
export function beginRound(init: BeginRound, ids: NewStageId): Transition {
  const first = init.mode === "solo" ? workStage(ids, []) : memberStage(ids, "plan", []);
  return {
    state: { ...init, phase: init.mode === "solo" ? "working" : "planning", stages: [first] },
    launch: [first.stage_id],
    ended: false,
  };
}

/** A round that must end before or between stages (a frozen-spec violation, an operator's stop). */
export function abortRound(state: RoundState, outcome: RoundOutcome): Transition {
  if (TERMINAL_PHASES.has(state.phase)) return { state, launch: [], ended: false };
  return end(state, outcome);
}

/** Distributes subtasks over `n` executor stages in slot order (one each when n equals their count). */
export function assignSubtasks(subtasks: readonly string[], n: number): string[][] {
  const buckets: string[][] = Array.from({ length: Math.min(n, subtasks.length) }, () => []);
  subtasks.forEach((id, i) => buckets[i % buckets.length]!.push(id));
  return buckets;
}

function stageFailed(s: StageRecord): RoundOutcome {
  if (s.error?.code === "evaluator_offline_runtime") {
    // Nobody can judge the round: a person must, or configure a model as the evaluator.
    return { status: "needs_human", reason: "evaluator_offline_runtime", detail: s.error.message, pause_class: "blocked_needs_decision" };
  }
  return {
    status: "needs_human",
    reason: s.kind === "work" ? "work_failed" : s.kind === "evaluate" ? "evaluator_failed" : "team_stage_failed",
    detail: `${s.role} stage ${s.stage_id} failed: ${s.error?.code ?? "unknown"}`,
    pause_class: "infra",
  };
}

/** Failures a replica could not fix: the same request would fail the same way, or there is nothing to spend. */
const NOT_REPLICABLE = new Set(["invalid_stage_request", "budget_exhausted", "round_ended", "admission_refused", "admission_expired"]);

/**
 * Applies one stage's end. Idempotent: an end for a stage that already ended, or that the round
 * does not know, changes nothing. An end arriving after the round is over is recorded on the stage
 * and nothing else happens.
 */
export function onStageEnd(state: RoundState, ev: StageEnd, ids: NewStageId): Transition {
  const idx = state.stages.findIndex((s) => s.stage_id === ev.stage_id);
  const current = state.stages[idx];
  if (!current || current.status === "completed" || current.status === "failed") return { state, launch: [], ended: false };
  const updated: StageRecord =
    ev.status === "completed"
      ? { ...current, status: "completed", outputs: ev.packets.map((p) => p.packet_id) }
      : { ...current, status: "failed", error: ev.error };
  const stages = state.stages.map((s, i) => (i === idx ? updated : s));
  const cur: RoundState = { ...state, stages };
  if (TERMINAL_PHASES.has(state.phase)) return { state: cur, launch: [], ended: false };

  switch (updated.kind) {
    case "plan": {
      if (ev.status === "failed") return end(cur, stageFailed(updated));
      if (ev.packets.length === 0) {
        // Nothing to decompose: a human decides, rather than a decomposition guessed from prose.
        return end(cur, {
          status: "needs_human",
          reason: "planner_no_packets",
          detail: "the planner handed off no subtask packet",
          pause_class: "no_progress",
        });
      }
      const subtasks = ev.packets.map((p) => p.packet_id);
      const withPlan: RoundState = { ...cur, subtasks };
      if (state.mode === "gray") {
        const regate = regateOnPlan(ev.packets);
        withPlan.regate = { decision: regate.decision, independent: regate.independent };
        // Fewer than 4 independent subtasks: the round goes back to the employee's own run, which
        // gets the plan to read (seed 002 "グレーゾーン").
        if (regate.decision === "solo") return next(withPlan, "working", [workStage(ids, subtasks)]);
      }
      const executors = assignSubtasks(subtasks, state.plan?.executors ?? 1).map((inputs) => memberStage(ids, "execute", inputs));
      return next(withPlan, "executing", executors);
    }
    case "execute": {
      // A failed executor gets one replica on the same subtasks before the round gives up on them
      // (seed 002: executor replica → verify without repair → needs_human); the charge decides
      // whether the budget allows it (a refused charge fails the replica, and the chain goes on).
      if (ev.status === "failed" && !updated.replica_of && !NOT_REPLICABLE.has(ev.error.code)) {
        return next(cur, "executing", [memberStage(ids, "execute", updated.inputs, { replica_of: updated.stage_id })]);
      }
      const executors = stages.filter((s) => s.kind === "execute");
      if (executors.some((s) => s.status !== "completed" && s.status !== "failed")) return { state: cur, launch: [], ended: false };
      const done = executors.filter((s) => s.status === "completed");
      if (done.length === 0) return end(cur, stageFailed(updated));
      const absorbed = executors.filter((s) => s.status === "failed").map((s) => s.stage_id);
      const withAbsorbed: RoundState = absorbed.length ? { ...cur, absorbed_failures: absorbed } : cur;
      const outputs = done.flatMap((s) => s.outputs ?? []);
      if (state.plan?.utility === true) return next(withAbsorbed, "synthesizing", [memberStage(ids, "synthesize", outputs)]);
      return next(withAbsorbed, "verifying", [memberStage(ids, "verify", outputs)]);
    }
    case "synthesize": {
      // The synthesis only feeds the acceptance path; without it the evaluator reads the packets.
      const outputs = stages.filter((s) => s.kind === "execute" && s.status === "completed").flatMap((s) => s.outputs ?? []);
      return next(cur, "verifying", [memberStage(ids, "verify", outputs)]);
    }
    case "verify": {
      if (ev.status === "failed") return end(cur, stageFailed(updated));
      const verdict = ev.verdict === "PASS" ? "PASS" : "FAIL";
      const judged: RoundState = {
        ...cur,
        verdict,
        verdict_source: ev.verdict === null || ev.verdict === undefined ? "unparseable" : "verifier",
        verdict_reasons: ev.reasons ?? [],
      };
      if (verdict === "FAIL" && state.plan?.repair === true) {
        // One repair pass, limited to the gaps the verifier named: the subtasks plus its gap packets.
        return next(judged, "repairing", [memberStage(ids, "repair", [...(state.subtasks ?? []), ...ev.packets.map((p) => p.packet_id)])]);
      }
      // PASS, or a FAIL with the repair pass degraded away: straight to the acceptance path.
      return next(judged, "evaluating", [evaluateStage(ids)]);
    }
    case "repair":
      // The repair pass ran (or failed); the executors' last output goes to the acceptance path.
      return next({ ...cur, repaired: ev.status === "completed" }, "evaluating", [evaluateStage(ids)]);
    case "work":
      if (ev.status === "failed") return end(cur, stageFailed(updated));
      return next(cur, "evaluating", [evaluateStage(ids)]);
    case "evaluate": {
      if (ev.status === "failed") return end(cur, stageFailed(updated));
      const evaluation = ev.evaluation;
      if (!evaluation) return end(cur, { ...stageFailed(updated), detail: "the evaluator's end carried no judgement" });
      const judged: RoundState = { ...cur, evaluation };
      if (evaluation.accepted) return end(judged, { status: "accepted", reason: "acceptance_passed" });
      return end(judged, {
        status: "rejected",
        reason: evaluation.stage_one === "rejected" ? "verifier_fail_unrepaired" : "criteria_unmet",
        detail: `${evaluation.unmet.length} of ${evaluation.criteria.length} criteria unmet`,
      });
    }
  }
}

/** Marks a stage's launch progress (pending → waiting_admission → dispatched). */
export function markStage(
  state: RoundState,
  stageId: string,
  patch: Partial<Pick<StageRecord, "status" | "job_id" | "member_id" | "runtime" | "model">>,
): RoundState {
  return { ...state, stages: state.stages.map((s) => (s.stage_id === stageId ? { ...s, ...patch } : s)) };
}
