import type { EffortLevel } from "./effort";
import type { GateMeasurementRecord } from "./gate-measure";
import type { GateMode } from "./settings";

/**
 * The decomposability gate (seed 002 "既定は Solo"): deterministic, no LLM. Default solo; a team
 * only when the measured signals say the work really splits. An unmeasured signal does not hold,
 * so the gate leans solo: the costly mistake is a team for work one agent would have finished.
 */
export interface GateSignalsInput {
  /** Work items that can run independently (measured, or absent). */
  independent_items?: number;
  /** Measured dependency hubs among them (absent: unmeasured). */
  dependency_hubs?: number;
  /** Whether the task fits one context window (absent: unmeasured). */
  fits_one_context?: boolean;
  /** Whether the task produces real artifacts (absent: unmeasured). */
  produces_artifacts?: boolean;
}

export interface GateExclusionsInput {
  live_channel_turn?: boolean;
  plan_first_pending?: boolean;
  irreversible_in_plan?: boolean;
}

/** Executor-vs-planner capability gap from a capability matrix, with its declared MDE (both in pp). */
export interface CapabilityGap {
  gap_pp: number;
  mde_pp: number;
}

export interface GateInput {
  mode: GateMode;
  sandbox_enabled: boolean;
  signals: GateSignalsInput;
  exclusions: GateExclusionsInput;
  acceptance_criteria_count: number;
  /** Goal-loop rounds left; fewer than 3 is a hard exclusion. Absent: not limited. */
  rounds_left?: number;
  /** No matrix feeds this today, so it is normally absent and the signal stays dark. */
  capability_gap?: CapabilityGap;
  /**
   * The task was routed under `[dispatch] policy = "role_team"`: the policy asks for the team, so the
   * signals are not consulted (docs/team.md). The sandbox rule, `always_solo` and the hard exclusions
   * still come first: the policy chooses the team, it does not lift a guard.
   */
  dispatch_role_team?: boolean;
}

export const GATE_SIGNALS = ["volume", "context", "capability_gap", "long_horizon"] as const;
export type GateSignal = (typeof GATE_SIGNALS)[number];

export const GATE_REASONS = [
  "sandbox_enabled",
  "gate_always_solo",
  "gate_always_team",
  "excluded_live_channel_turn",
  "excluded_plan_first_pending",
  "excluded_irreversible_in_plan",
  "excluded_rounds_left",
  "dispatch_role_team",
  "signals_team",
  "signals_gray",
  "signals_solo",
] as const;
export type GateReason = (typeof GATE_REASONS)[number];

export interface SignalReading {
  holds: boolean;
  /** True when some input the signal needs was not measured (it then does not hold). */
  unmeasured: boolean;
}

export interface GateDecision {
  decision: "solo" | "team" | "gray";
  reason: GateReason;
  signals: Record<GateSignal, SignalReading> & { held: number };
  /** A solo decision may carry an effort hint: the cheapest improvement is often the knob. */
  effort_hint?: EffortLevel;
  /**
   * What the inputs were measured from (gate-measure.ts), kept with the decision so a person can see
   * why. Set by the goal path, not by `decideGate`, which only reads the inputs.
   */
  measured?: GateMeasurementRecord;
}

export const MIN_INDEPENDENT_ITEMS = 4;
export const MIN_ACCEPTANCE_CRITERIA = 3;
export const MIN_ROUNDS_LEFT = 3;

export function readSignals(input: Pick<GateInput, "signals" | "acceptance_criteria_count" | "capability_gap">): GateDecision["signals"] {
  const s = input.signals;
  const volumeUnmeasured = s.independent_items === undefined || s.dependency_hubs === undefined;
  const volume = {
    holds: !volumeUnmeasured && s.independent_items! >= MIN_INDEPENDENT_ITEMS && s.dependency_hubs === 0,
    unmeasured: volumeUnmeasured,
  };
  const context = { holds: s.fits_one_context === false, unmeasured: s.fits_one_context === undefined };
  const gap = input.capability_gap;
  const capability_gap = { holds: gap !== undefined && gap.gap_pp >= gap.mde_pp, unmeasured: gap === undefined };
  const long_horizon = {
    holds: input.acceptance_criteria_count >= MIN_ACCEPTANCE_CRITERIA && s.produces_artifacts === true,
    unmeasured: s.produces_artifacts === undefined,
  };
  const held = [volume, context, capability_gap, long_horizon].filter((r) => r.holds).length;
  return { volume, context, capability_gap, long_horizon, held };
}

function hardExclusion(input: GateInput): GateReason | null {
  if (input.exclusions.live_channel_turn === true) return "excluded_live_channel_turn";
  if (input.exclusions.plan_first_pending === true) return "excluded_plan_first_pending";
  if (input.exclusions.irreversible_in_plan === true) return "excluded_irreversible_in_plan";
  if (input.rounds_left !== undefined && input.rounds_left < MIN_ROUNDS_LEFT) return "excluded_rounds_left";
  return null;
}

/**
 * Order of the rules: the sandbox rule first (before every mode, `always_team` included), then the
 * `always_solo` kill switch, then `always_team` (test only: it skips the hard exclusions), then the
 * hard exclusions, then the `role_team` dispatch policy (team), then the signals: ≥ 3 → team,
 * exactly 2 → gray zone, otherwise solo.
 */
export function decideGate(input: GateInput): GateDecision {
  const signals = readSignals(input);
  if (input.sandbox_enabled) return { decision: "solo", reason: "sandbox_enabled", signals };
  if (input.mode === "always_solo") return { decision: "solo", reason: "gate_always_solo", signals };
  if (input.mode === "always_team") return { decision: "team", reason: "gate_always_team", signals };
  const excluded = hardExclusion(input);
  if (excluded) return { decision: "solo", reason: excluded, signals };
  if (input.dispatch_role_team === true) return { decision: "team", reason: "dispatch_role_team", signals };
  if (signals.held >= 3) return { decision: "team", reason: "signals_team", signals };
  if (signals.held === 2) return { decision: "gray", reason: "signals_gray", signals };
  // One signal short of a gray zone: the work is not trivially small, so suggest more effort.
  return { decision: "solo", reason: "signals_solo", signals, ...(signals.held === 1 ? { effort_hint: "high" as const } : {}) };
}

/** A planned subtask as the re-gate sees it: its id and what it depends on. */
export interface PlannedSubtask {
  packet_id: string;
  depends_on: readonly string[];
}

export type RegateReason = "regate_team" | "regate_solo";

/**
 * The gray zone, decided on the real decomposition: the planner ran once (a call the task pays
 * anyway) and its subtasks are counted. A subtask is independent when it declares no dependency
 * and no other subtask depends on it. ≥ 4 independent → team; else solo, with the plan kept.
 */
export function regateOnPlan(subtasks: readonly PlannedSubtask[]): {
  decision: "team" | "solo";
  reason: RegateReason;
  independent: number;
} {
  const ids = new Set(subtasks.map((s) => s.packet_id));
  const dependedOn = new Set(subtasks.flatMap((s) => s.depends_on.filter((d) => ids.has(d))));
  // Any declared dependency, even on something outside the plan, makes a subtask dependent: the
  // re-gate leans solo like the gate itself.
  const independent = subtasks.filter((s) => !dependedOn.has(s.packet_id) && s.depends_on.length === 0).length;
  return independent >= MIN_INDEPENDENT_ITEMS
    ? { decision: "team", reason: "regate_team", independent }
    : { decision: "solo", reason: "regate_solo", independent };
}
