import { STAGE_ROLE, type DegradeStep, type RoundPlan, type StageKind } from "./budget";
import { regateOnPlan, type PlannedSubtask } from "./gate";
import type { TeamRole } from "./settings";

/**
 * The round composer (seed 002 "1 ラウンド、3 段階") as a pure state machine: plan → execute
 * (fan-out up to the planned executors, one stage per subtask packet) → verify → one repair pass on
 * FAIL → settle. It decides; the driver (rounds.ts) reads legs, dispatches stages and records. A
 * stage that fails fails only itself (`team_stage_failed`): a role never moves to another vendor.
 */
export const ROUND_PHASES = [
  "planning",
  "executing",
  "verifying",
  "repairing",
  "settled",
  "needs_human",
  "failed",
  "solo",
  "cancelled",
] as const;
export type RoundPhase = (typeof ROUND_PHASES)[number];

/** `cancelled`: the goal task was settled from outside (an operator) while its round still ran. */
export const TERMINAL_PHASES: ReadonlySet<RoundPhase> = new Set(["settled", "needs_human", "failed", "solo", "cancelled"]);

export type StageStatus = "pending" | "waiting_admission" | "dispatched" | "completed" | "failed";

export interface StageRecord {
  stage_id: string;
  kind: StageKind;
  role: TeamRole;
  status: StageStatus;
  /** Packet ids this stage works from (execute: its subtasks; verify: executor outputs; repair: subtasks and gaps). */
  inputs: string[];
  job_id?: string;
  member_id?: string;
  /** Packet ids this stage wrote. */
  outputs?: string[];
  error?: { code: string; message: string };
}

export interface RoundOutcome {
  status: "settled" | "needs_human" | "failed" | "solo" | "cancelled";
  reason: string;
  detail?: string;
  /** For needs_human: the task settle's pause class (API.md). */
  pause_class?: "no_progress" | "budget_exhausted" | "blocked_needs_decision" | "infra" | "unknown";
}

export interface RoundState {
  round_id: string;
  task_id: string;
  round_no: number;
  /** `gray`: the planner runs once and the gate is re-run on its real decomposition. */
  mode: "team" | "gray";
  phase: RoundPhase;
  plan: RoundPlan;
  degrade_steps: DegradeStep[];
  stages: StageRecord[];
  subtasks?: string[];
  regate?: { decision: "team" | "solo"; independent: number };
  verdict?: "PASS" | "FAIL";
  /** `unparseable`: the verifier answered without a readable verdict, which counts as FAIL (fail closed). */
  verdict_source?: "verifier" | "unparseable";
  verdict_reasons?: string[];
  repaired?: boolean;
  /** Executor stages that failed while siblings succeeded (the replica step absorbed them). */
  absorbed_failures?: string[];
  outcome?: RoundOutcome;
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

function stage(ids: NewStageId, kind: StageKind, inputs: string[]): StageRecord {
  return { stage_id: ids(), kind, role: STAGE_ROLE[kind], status: "pending", inputs };
}

function end(state: RoundState, outcome: RoundOutcome): Transition {
  return { state: { ...state, phase: outcome.status === "settled" ? "settled" : outcome.status, outcome }, launch: [], ended: true };
}

export interface BeginRound {
  round_id: string;
  task_id: string;
  round_no: number;
  mode: "team" | "gray";
  plan: RoundPlan;
  degrade_steps: DegradeStep[];
}

/** A round starts with its planner. */
export function beginRound(init: BeginRound, ids: NewStageId): Transition {
  const plan = stage(ids, "plan", []);
  return { state: { ...init, phase: "planning", stages: [plan] }, launch: [plan.stage_id], ended: false };
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

function stageFailed(state: RoundState, s: StageRecord): RoundOutcome {
  return {
    status: "needs_human",
    reason: "team_stage_failed",
    detail: `${s.role} stage ${s.stage_id} failed: ${s.error?.code ?? "unknown"}`,
    pause_class: "infra",
  };
}

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
  const next: RoundState = { ...state, stages };
  if (TERMINAL_PHASES.has(state.phase)) return { state: next, launch: [], ended: false };

  switch (updated.kind) {
    case "plan": {
      if (ev.status === "failed") return end(next, stageFailed(next, updated));
      if (ev.packets.length === 0) {
        // Nothing to decompose: a human decides, rather than a decomposition guessed from prose.
        return end(next, {
          status: "needs_human",
          reason: "planner_no_packets",
          detail: "the planner handed off no subtask packet",
          pause_class: "no_progress",
        });
      }
      const subtasks = ev.packets.map((p) => p.packet_id);
      const withPlan: RoundState = { ...next, subtasks };
      if (state.mode === "gray") {
        const regate = regateOnPlan(ev.packets);
        withPlan.regate = { decision: regate.decision, independent: regate.independent };
        if (regate.decision === "solo") {
          return end(withPlan, {
            status: "solo",
            reason: "regate_solo",
            detail: `${regate.independent} independent subtasks; the plan is kept for the solo run`,
          });
        }
      }
      const executors = assignSubtasks(subtasks, state.plan.executors).map((inputs) => stage(ids, "execute", inputs));
      return {
        state: { ...withPlan, phase: "executing", stages: [...stages, ...executors] },
        launch: executors.map((s) => s.stage_id),
        ended: false,
      };
    }
    case "execute": {
      const executors = stages.filter((s) => s.kind === "execute");
      if (executors.some((s) => s.status !== "completed" && s.status !== "failed")) return { state: next, launch: [], ended: false };
      const done = executors.filter((s) => s.status === "completed");
      if (done.length === 0) return end(next, stageFailed(next, updated));
      const absorbed = executors.filter((s) => s.status === "failed").map((s) => s.stage_id);
      const verify = stage(
        ids,
        "verify",
        done.flatMap((s) => s.outputs ?? []),
      );
      return {
        state: { ...next, phase: "verifying", stages: [...stages, verify], ...(absorbed.length ? { absorbed_failures: absorbed } : {}) },
        launch: [verify.stage_id],
        ended: false,
      };
    }
    case "verify": {
      if (ev.status === "failed") return end(next, stageFailed(next, updated));
      const verdict = ev.verdict === "PASS" ? "PASS" : "FAIL";
      const judged: RoundState = {
        ...next,
        verdict,
        verdict_source: ev.verdict === null || ev.verdict === undefined ? "unparseable" : "verifier",
        verdict_reasons: ev.reasons ?? [],
      };
      if (verdict === "PASS") return end(judged, { status: "settled", reason: "verifier_pass" });
      if (!state.plan.repair) return end(judged, { status: "settled", reason: "verifier_fail_no_repair" });
      // One repair pass, limited to the gaps the verifier named: the subtasks plus its gap packets.
      const repair = stage(ids, "repair", [...(state.subtasks ?? []), ...ev.packets.map((p) => p.packet_id)]);
      return { state: { ...judged, phase: "repairing", stages: [...stages, repair] }, launch: [repair.stage_id], ended: false };
    }
    case "repair":
      // The repair pass ran (or failed); the executor's last output goes to the acceptance path.
      return end({ ...next, repaired: ev.status === "completed" }, { status: "settled", reason: "verifier_fail_repaired" });
  }
}

/** Marks a stage's launch progress (pending → waiting_admission → dispatched). */
export function markStage(
  state: RoundState,
  stageId: string,
  patch: Partial<Pick<StageRecord, "status" | "job_id" | "member_id">>,
): RoundState {
  return { ...state, stages: state.stages.map((s) => (s.stage_id === stageId ? { ...s, ...patch } : s)) };
}

/**
 * The best round so far, attached when the budget runs out: a verifier PASS beats a FAIL, a repaired
 * FAIL beats an unrepaired one, more completed executors beat fewer, a later round beats an earlier.
 */
export function bestRound(rounds: readonly RoundState[]): RoundState | undefined {
  const score = (r: RoundState) => [
    r.verdict === "PASS" ? 2 : r.verdict === "FAIL" ? 1 : 0,
    r.repaired ? 1 : 0,
    r.stages.filter((s) => s.kind === "execute" && s.status === "completed").length,
    r.round_no,
  ];
  return [...rounds].sort((a, b) => {
    const [sa, sb] = [score(a), score(b)];
    for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return sb[i]! - sa[i]!;
    return 0;
  })[0];
}
