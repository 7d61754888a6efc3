import { EVOLUTION_STRATEGIES } from "./config";
import { isLive, netScore, type PlaybookEntry } from "./playbook";

/**
 * A round's intent (seed 003 §12.5 intent.rs, §12.5.1 strategy mix, GEP G4 instead of plain
 * ε-exploration): deterministic, zero LLM. The strategy sets the shares of repair (digest the mistake
 * notebook), optimize (refine entries with a low success streak) and innovate (explore a new entry).
 * The seed leaves the exact shares to a guide this codebase does not have; the table below is ours.
 * A round whose drawn intent has no material falls back to the next-weighted intent that has some;
 * when none has, the round is an honest Skip (recorded, never forced).
 */
export const INTENTS = ["repair", "optimize", "innovate"] as const;
export type IntentKind = (typeof INTENTS)[number];
export type Strategy = (typeof EVOLUTION_STRATEGIES)[number];

export const STRATEGY_MIX: Readonly<Record<Strategy, Readonly<Record<IntentKind, number>>>> = {
  balanced: { repair: 0.5, optimize: 0.3, innovate: 0.2 },
  innovate: { repair: 0.2, optimize: 0.3, innovate: 0.5 },
  harden: { repair: 0.4, optimize: 0.6, innovate: 0 },
  repair_only: { repair: 1, optimize: 0, innovate: 0 },
};

/** An entry whose success streak is below this is an optimize target. */
export const OPTIMIZE_STREAK_BELOW = 3;

/** What each intent could work on this round. */
export interface IntentMaterial {
  /** Mistake notes not yet digested by a round (repair). */
  open_mistakes: number;
  /** Eval cases no live entry links yet, plus the trigger context when the round has one (innovate). */
  innovation_seeds: number;
}

export type Intent =
  | {
      kind: "run";
      intent: IntentKind;
      strategy: Strategy;
      /** True when the configured strategy was not recognized and `balanced` was used. */
      strategy_fallback: boolean;
      /** The deterministic draw in [0, 1) for this round. */
      draw: number;
      /** The intent drawn, when material forced another. */
      drawn: IntentKind;
      /** Why this intent: `drawn`, `fallback_no_material`, `stagnation_bias`. */
      reason: "drawn" | "fallback_no_material" | "stagnation_bias";
      /** For optimize: the entries to refine, weakest first. */
      targets: string[];
    }
  | { kind: "skip"; reason: "no_material"; strategy: Strategy; strategy_fallback: boolean; draw: number; drawn: IntentKind };

/** Live entries worth refining: success streak below 3, weakest first (streak, net score, id). */
export function optimizeTargets(entries: readonly PlaybookEntry[]): string[] {
  return entries
    .filter((e) => isLive(e) && e.success_streak < OPTIMIZE_STREAK_BELOW)
    .sort(
      (a, b) =>
        a.success_streak - b.success_streak ||
        netScore(a) - netScore(b) ||
        (a.entry_id < b.entry_id ? -1 : a.entry_id > b.entry_id ? 1 : 0),
    )
    .map((e) => e.entry_id);
}

/** Eval cases that no live entry links (innovation material). */
export function uncoveredCases(entries: readonly PlaybookEntry[], allCases: readonly string[]): string[] {
  const linked = new Set(entries.filter(isLive).flatMap((e) => e.eval_cases));
  return [...new Set(allCases)].filter((c) => !linked.has(c)).sort();
}

/** Round n's draw: the fractional part of n·(√5 − 1)/2, a low-discrepancy sequence (no randomness to replay). */
export function roundDraw(roundSeq: number): number {
  const x = roundSeq * 0.6180339887498949;
  return Math.round((x - Math.floor(x)) * 1e9) / 1e9;
}

export function decideIntent(input: {
  strategy: string;
  round_seq: number;
  entries: readonly PlaybookEntry[];
  material: IntentMaterial;
  /** Stagnation detected (stagnation.ts): exploration goes first when the strategy allows any. */
  stagnant?: boolean;
}): Intent {
  const known = (EVOLUTION_STRATEGIES as readonly string[]).includes(input.strategy);
  const strategy: Strategy = known ? (input.strategy as Strategy) : "balanced";
  const mix = STRATEGY_MIX[strategy];
  const draw = roundDraw(input.round_seq);
  let acc = 0;
  let drawn: IntentKind = "repair";
  for (const k of INTENTS) {
    if (mix[k] <= 0) continue;
    drawn = k;
    acc += mix[k];
    if (draw < acc) break;
  }
  const targets = optimizeTargets(input.entries);
  const has: Record<IntentKind, boolean> = {
    repair: input.material.open_mistakes > 0,
    optimize: targets.length > 0,
    innovate: input.material.innovation_seeds > 0,
  };
  const base = { strategy, strategy_fallback: !known, draw, drawn };
  const run = (intent: IntentKind, reason: "drawn" | "fallback_no_material" | "stagnation_bias"): Intent => ({
    kind: "run",
    intent,
    ...base,
    reason,
    targets: intent === "optimize" ? targets : [],
  });
  if (input.stagnant && mix.innovate > 0 && has.innovate) return run("innovate", drawn === "innovate" ? "drawn" : "stagnation_bias");
  if (has[drawn]) return run(drawn, "drawn");
  // Fall back by weight, highest first (ties in INTENTS order); a zero share is never used.
  const order = INTENTS.filter((k) => k !== drawn && mix[k] > 0).sort((a, b) => mix[b] - mix[a]);
  for (const k of order) if (has[k]) return run(k, "fallback_no_material");
  return { kind: "skip", reason: "no_material", ...base };
}
