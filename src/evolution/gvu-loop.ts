import { sha256HexSync } from "../council/sha256";
import type { TextGradient } from "./gvu-types";
import { MAX_SOUL_BYTES, simulatedSoul, type VerificationResult } from "./gvu-verify";

/**
 * The legacy GVU loop's control flow (seed 003 §4.2) as pure steps: at most `max_gvu_generations`
 * (3) generate → verify attempts; the first refusal of a generation ends it with a TextGradient for
 * the next; an approved proposal is applied; three refusals abandon the loop with the last gradient.
 * A loop that cannot start (the agent's lock is held, a version is still under observation) is
 * Skipped with its reason.
 */
export const MAX_GENERATIONS = 3;

export type GvuOutcome =
  | { kind: "applied"; attempt: number; confidence: number; advisories: TextGradient[] }
  | { kind: "abandoned"; last_gradient: TextGradient }
  | { kind: "skipped"; reason: GvuSkipReason };

export type GvuSkipReason = "gvu_disabled" | "not_legacy" | "agent_locked" | "observing" | "cooldown";

/** Whether a legacy loop may start now; the first failing condition names the skip. */
export function gvuPrecheck(input: {
  gvu_enabled: boolean;
  legacy_soul_evolution: boolean;
  locked: boolean;
  observing: boolean;
  cooldown_until: string | null;
  now: Date;
}): { run: true } | { run: false; outcome: Extract<GvuOutcome, { kind: "skipped" }> } {
  const skip = (reason: GvuSkipReason) => ({ run: false as const, outcome: { kind: "skipped" as const, reason } });
  if (!input.gvu_enabled) return skip("gvu_disabled");
  if (!input.legacy_soul_evolution) return skip("not_legacy");
  if (input.locked) return skip("agent_locked");
  if (input.observing) return skip("observing");
  if (input.cooldown_until !== null && Date.parse(input.cooldown_until) > input.now.getTime()) return skip("cooldown");
  return { run: true };
}

export interface GvuLoopState {
  max_generations: number;
  /** Generations finished so far. */
  attempts: number;
  /** Gradients from refused generations, oldest first (the generator's TextGrad feedback). */
  gradients: TextGradient[];
  outcome: GvuOutcome | null;
}

export function startGvuLoop(maxGenerations = MAX_GENERATIONS): GvuLoopState {
  return { max_generations: Math.max(1, Math.floor(maxGenerations)), attempts: 0, gradients: [], outcome: null };
}

/** The gradient for a generator reply that could not be read (the attempt is spent, like a refusal). */
export const UNPARSEABLE_GENERATION: TextGradient = {
  target: "generator reply",
  critique: "The reply was not the requested JSON object.",
  suggestion: 'Reply with one JSON object: {"proposed_changes", "rationale", "expected_improvement"}.',
  source_layer: "Generator",
  severity: "blocking",
};

/** One generation's result: its verification, or `unparseable` when the generator's reply did not parse. */
export function onGeneration(state: GvuLoopState, result: VerificationResult | "unparseable"): GvuLoopState {
  if (state.outcome) return state;
  const attempts = state.attempts + 1;
  if (result !== "unparseable" && result.approved)
    return {
      ...state,
      attempts,
      outcome: { kind: "applied", attempt: attempts, confidence: result.confidence, advisories: result.advisories },
    };
  const gradient = result === "unparseable" ? UNPARSEABLE_GENERATION : result.gradient;
  const gradients = [...state.gradients, gradient];
  if (attempts >= state.max_generations) return { ...state, attempts, gradients, outcome: { kind: "abandoned", last_gradient: gradient } };
  return { ...state, attempts, gradients };
}

/**
 * The new SOUL.md (§4.5 steps 2–3 and 7): always an append, never a replacement (truncation attacks),
 * checked non-empty and at most 50 KB, with the SHA-256 the soul guard records.
 */
export function buildAppliedSoul(
  current: string,
  proposed: string,
): { ok: true; soul: string; soul_hash: string; bytes: number } | { ok: false; reason: "empty" | "too_large" } {
  if (proposed.trim() === "") return { ok: false, reason: "empty" };
  const soul = simulatedSoul(current, proposed);
  const bytes = new TextEncoder().encode(soul).length;
  if (soul.trim() === "") return { ok: false, reason: "empty" };
  if (bytes > MAX_SOUL_BYTES) return { ok: false, reason: "too_large" };
  return { ok: true, soul, soul_hash: sha256HexSync(soul), bytes };
}

/** §4.8 proposal lifecycle. */
export const PROPOSAL_STATUSES = [
  "generating",
  "verifying",
  "rejected",
  "approved",
  "applied",
  "observing",
  "confirmed",
  "rolled_back",
] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

const NEXT: Readonly<Record<ProposalStatus, readonly ProposalStatus[]>> = {
  generating: ["verifying"],
  verifying: ["rejected", "approved"],
  rejected: [],
  approved: ["applied"],
  applied: ["observing"],
  observing: ["confirmed", "rolled_back"],
  confirmed: [],
  rolled_back: [],
};

export function canTransition(from: ProposalStatus, to: ProposalStatus): boolean {
  return NEXT[from].includes(to);
}
