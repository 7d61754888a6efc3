import type { Effect, MachineContext } from "./machine-types";
import type { Phase, SessionState } from "./session";

export function enterPhase(state: SessionState, phase: Phase, ctx: MachineContext, fx: Effect[], detail: Record<string, unknown> = {}) {
  const from = state.phase;
  state.phase = phase;
  state.phase_started_at = ctx.now.toISOString();
  fx.push({ kind: "feed", type: "council.phase_changed", payload: { session_id: state.session_id, from, to: phase, ...detail } });
}

/** Tabled and abandoned sessions release the proposal and reset a project to `proposed`. */
export function endWithout(state: SessionState, phase: "tabled" | "abandoned", reason: string, ctx: MachineContext, fx: Effect[]) {
  state.end_reason = reason;
  enterPhase(state, phase, ctx, fx, { reason });
  fx.push({ kind: "proposal_status", status: phase });
  if (state.kind === "project") fx.push({ kind: "project_status", to: "proposed", from: ["council_review"] });
}
