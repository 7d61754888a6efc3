import { decideIntent, type Intent, type IntentMaterial } from "./aee-intent";
import { GATE_ORDER, runGate, type Advisory, type GateCheck, type GateContext, type GateResult } from "./aee-gate";
import type { CaseResult, MeasureVector } from "./aee-measure";
import { commitVerdict, heldOutCases, type CommitReason, type CommitVerdict, type DriftLedger, type NoiseBand } from "./commit-gate";
import { applyDelta, noteFailures, type EntryChange, type MergeContext, type MergeRefusal } from "./playbook-merge";
import { championFingerprint, type FailureNote, type Playbook } from "./playbook";
import { settleItemsFor, type SettleItem } from "./settle";

/**
 * One AEE round as a pure state machine (seed 003 §12.5 run.rs / inner_loop.rs). The orchestrator owns
 * the I/O (the generator, case replays and the judge are runner jobs) and feeds each result back in:
 *
 *   startRound ─► skipped (intent Skip, recorded honestly)
 *        └─► awaiting_champion ─recordChampion─► awaiting_candidate
 *   awaiting_candidate ─submitCandidate─► (Gate refuses) awaiting_candidate | abandoned after 3 attempts
 *                                       └► (Gate passes, shadow applied) awaiting_measure
 *   awaiting_measure ─submitMeasure─► (commit gate refuses) awaiting_candidate | abandoned after 3
 *                                   └► ready_to_commit ─commitRound─► committed
 *
 * Nothing is applied during the inner loop: the shadow is a copy. Only `commitRound` returns a changed
 * playbook; `abandonRound` returns one whose only difference is failure notes (§12.5: the round's
 * lessons are kept on purpose, everything else is byte-identical; see `canonicalPlaybook`).
 */
export const MAX_INNER_ATTEMPTS = 3;

export type RoundPhase =
  "skipped" | "awaiting_champion" | "awaiting_candidate" | "awaiting_measure" | "ready_to_commit" | "committed" | "abandoned";

export interface AttemptRecord {
  attempt: number;
  /** `generate`: the generator yielded no candidate at all (its job failed, its answer was unusable). */
  stage: "generate" | "gate" | "measure";
  /** The Gate check that refused, `commit` (the commit gate), or `generator` (no candidate to judge). */
  check: GateCheck | "commit" | "generator";
  reason: string;
  detail: string;
  /** Existing entries the candidate touched (update / retire targets): where the lesson is noted. */
  targets: string[];
  advisories: Advisory[];
}

export interface RoundState {
  round_id: string;
  agent_id: string;
  round_seq: number;
  started_at: string;
  intent: Intent;
  phase: RoundPhase;
  champion_fingerprint: string;
  champion: MeasureVector | null;
  heldout: string[];
  attempts: AttemptRecord[];
  /** The candidate that passed the Gate and waits for its Measure. */
  pending: { delta: unknown; changes: EntryChange[]; advisories: Advisory[] } | null;
  /** The candidate that passed the commit gate. */
  accepted: { delta: unknown; verdict: CommitVerdict; measure: MeasureVector } | null;
  end_reason:
    | "no_material"
    | "attempts_exhausted"
    | "champion_moved"
    | "merge_refused"
    /** The generator cannot produce a candidate at all (the offline runtime answers labelled text): retrying is pointless. */
    | "generator_unavailable"
    /** A commit waiting for a person was denied, expired, had nobody to decide it, or its diff changed. */
    | "commit_discarded"
    | CommitReason
    | null;
}

export class RoundStateError extends Error {}

function expectPhase(s: RoundState, phase: RoundPhase) {
  if (s.phase !== phase) throw new RoundStateError(`round ${s.round_id} is ${s.phase}, not ${phase}`);
}

function targetsOf(raw: unknown): string[] {
  const ops = raw && typeof raw === "object" && Array.isArray((raw as { ops?: unknown }).ops) ? (raw as { ops: unknown[] }).ops : [];
  const ids = ops.flatMap((op) => {
    const id = op && typeof op === "object" ? (op as { entry_id?: unknown }).entry_id : undefined;
    return typeof id === "string" ? [id] : [];
  });
  return [...new Set(ids)];
}

export function startRound(input: {
  round_id: string;
  agent_id: string;
  round_seq: number;
  playbook: Playbook;
  strategy: string;
  material: IntentMaterial;
  stagnant?: boolean;
  /** Every eval case the round may replay (the held-out draw comes from these). */
  all_cases: readonly string[];
  now: Date;
}): RoundState {
  const intent = decideIntent({
    strategy: input.strategy,
    round_seq: input.round_seq,
    entries: input.playbook.entries,
    material: input.material,
    ...(input.stagnant !== undefined ? { stagnant: input.stagnant } : {}),
  });
  return {
    round_id: input.round_id,
    agent_id: input.agent_id,
    round_seq: input.round_seq,
    started_at: input.now.toISOString(),
    intent,
    phase: intent.kind === "skip" ? "skipped" : "awaiting_champion",
    champion_fingerprint: championFingerprint(input.playbook.entries),
    champion: null,
    heldout: heldOutCases(input.all_cases, input.round_seq),
    attempts: [],
    pending: null,
    accepted: null,
    end_reason: intent.kind === "skip" ? "no_material" : null,
  };
}

/** The champion bootstrap: the current live playbook scored once. */
export function recordChampion(s: RoundState, champion: MeasureVector): RoundState {
  expectPhase(s, "awaiting_champion");
  return { ...s, champion, phase: "awaiting_candidate" };
}

function failAttempt(s: RoundState, rec: Omit<AttemptRecord, "attempt">): RoundState {
  const attempts = [...s.attempts, { attempt: s.attempts.length + 1, ...rec }];
  const done = attempts.length >= MAX_INNER_ATTEMPTS;
  return {
    ...s,
    attempts,
    pending: null,
    phase: done ? "abandoned" : "awaiting_candidate",
    end_reason: done ? "attempts_exhausted" : null,
  };
}

/**
 * A generated candidate: the Gate runs on it (zero LLM). Refused: the attempt is recorded with the
 * refusing check and the loop asks for another candidate, or ends after the third. Passed: the shadow
 * waits for its Measure. A playbook that moved since the champion was taken abandons the round.
 */
export function submitCandidate(s: RoundState, rawDelta: unknown, gateCtx: GateContext): { state: RoundState; gate: GateResult | null } {
  expectPhase(s, "awaiting_candidate");
  if (championFingerprint(gateCtx.playbook.entries) !== s.champion_fingerprint)
    return { state: { ...s, phase: "abandoned", end_reason: "champion_moved", pending: null }, gate: null };
  const gate = runGate(rawDelta, gateCtx);
  if (!gate.pass)
    return {
      state: failAttempt(s, {
        stage: "gate",
        check: gate.check,
        reason: gate.reason,
        detail: gate.detail,
        targets: targetsOf(rawDelta),
        advisories: gate.advisories,
      }),
      gate,
    };
  return {
    state: { ...s, phase: "awaiting_measure", pending: { delta: rawDelta, changes: gate.changes, advisories: gate.advisories } },
    gate,
  };
}

/** The shadow's Measure, compared with the champion by the commit gate (with its drift guards). */
export function submitMeasure(
  s: RoundState,
  candidate: MeasureVector,
  opts: { band?: NoiseBand; ledger?: DriftLedger } = {},
): { state: RoundState; verdict: CommitVerdict } {
  expectPhase(s, "awaiting_measure");
  if (!s.champion || !s.pending) throw new RoundStateError(`round ${s.round_id} has no champion or candidate`);
  const verdict = commitVerdict({
    candidate,
    champion: s.champion,
    heldout: s.heldout,
    ...(opts.band ? { band: opts.band } : {}),
    ...(opts.ledger ? { ledger: opts.ledger } : {}),
  });
  if (!verdict.commit)
    return {
      state: failAttempt(s, {
        stage: "measure",
        check: "commit",
        reason: verdict.reason,
        detail: `cases ${verdict.dims.cases.verdict}, judge ${verdict.dims.judge.verdict}, held-out ${verdict.dims.heldout.verdict}`,
        targets: targetsOf(s.pending.delta),
        advisories: s.pending.advisories,
      }),
      verdict,
    };
  return {
    state: { ...s, phase: "ready_to_commit", accepted: { delta: s.pending.delta, verdict, measure: candidate }, pending: null },
    verdict,
  };
}

/**
 * A generator call that yielded no candidate (its job failed or died, its answer was empty or not
 * JSON): the attempt is spent and recorded under `generator`, since no Gate check saw anything.
 * `final` ends the round at once (`generator_unavailable`): a generator that can never answer (the
 * offline runtime) is not retried.
 */
export function failGeneration(s: RoundState, reason: string, detail: string, opts: { final?: boolean } = {}): RoundState {
  expectPhase(s, "awaiting_candidate");
  const next = failAttempt(s, { stage: "generate", check: "generator", reason, detail, targets: [], advisories: [] });
  return opts.final ? { ...next, phase: "abandoned", end_reason: "generator_unavailable" } : next;
}

/** A prepared commit that will not be applied (approval denied, expired, nobody to decide, diff changed). */
export function discardCommit(s: RoundState): RoundState {
  expectPhase(s, "ready_to_commit");
  return { ...s, phase: "abandoned", end_reason: "commit_discarded" };
}

/** What the generator hears before its next attempt (the TextGrad-style feedback of the inner loop). */
export function feedbackFor(s: RoundState): string[] {
  return s.attempts.map((a) =>
    a.stage === "generate"
      ? `Attempt ${a.attempt} produced no usable candidate (${a.reason}): ${a.detail}`
      : `Attempt ${a.attempt} refused at ${a.stage === "gate" ? a.check : "the commit gate"} (${a.reason}): ${a.detail}`,
  );
}

export type CommitResult =
  | {
      ok: true;
      state: RoundState;
      playbook: Playbook;
      changes: EntryChange[];
      settle: SettleItem[];
      ledger: DriftLedger;
    }
  | { ok: false; state: RoundState; reason: "champion_moved" | MergeRefusal; detail: string };

/**
 * The commit: the accepted delta applied to the playbook as it is now, the only step that changes it.
 * The playbook must still be the champion (same fingerprint), or the round is abandoned unapplied.
 */
export function commitRound(
  s: RoundState,
  pb: Playbook,
  ctx: MergeContext & { settle_hours: number; shadow_results: readonly CaseResult[] },
): CommitResult {
  expectPhase(s, "ready_to_commit");
  const abandoned = (reason: "champion_moved" | MergeRefusal, detail: string): CommitResult => ({
    ok: false,
    state: { ...s, phase: "abandoned", end_reason: reason === "champion_moved" ? "champion_moved" : "merge_refused" },
    reason,
    detail,
  });
  if (championFingerprint(pb.entries) !== s.champion_fingerprint)
    return abandoned("champion_moved", "the playbook changed during the round");
  const merged = applyDelta(pb, s.accepted!.delta, ctx);
  if (!merged.ok) return abandoned(merged.reason, merged.detail);
  const settle = settleItemsFor(merged.changes, ctx.shadow_results, { round_id: s.round_id, now: ctx.now, settle_hours: ctx.settle_hours });
  return {
    ok: true,
    state: { ...s, phase: "committed", end_reason: s.accepted!.verdict.reason },
    playbook: merged.playbook,
    changes: merged.changes,
    settle,
    ledger: s.accepted!.verdict.ledger,
  };
}

/**
 * The end of a round that commits nothing: each refused attempt leaves a failure note on the existing
 * entries it targeted, and nothing else changes (not even `updated_at`). Lessons about entries that
 * never existed (refused additions) stay in the round's record (`unnoted`).
 */
export function abandonRound(s: RoundState, pb: Playbook, now: Date): { state: RoundState; playbook: Playbook; unnoted: AttemptRecord[] } {
  const notes: { entry_id: string; note: FailureNote }[] = [];
  const unnoted: AttemptRecord[] = [];
  for (const a of s.attempts) {
    if (a.targets.length === 0) unnoted.push(a);
    for (const id of a.targets)
      notes.push({
        entry_id: id,
        note: {
          at: now.toISOString(),
          round_id: s.round_id,
          reason: `${a.stage}:${a.check}:${a.reason}`.slice(0, 128),
          detail: a.detail.slice(0, 400),
        },
      });
  }
  const { playbook } = noteFailures(pb, notes);
  const state: RoundState =
    s.phase === "abandoned" ? s : { ...s, phase: "abandoned", end_reason: s.end_reason ?? "attempts_exhausted", pending: null };
  return { state, playbook, unnoted };
}

/**
 * Rejection telemetry (§12.5 telemetry.rs): refusals per Gate check and at the commit gate, each with
 * its reasons, and the attempts whose generator produced nothing to judge (`generator`).
 */
export type RejectionTally = Record<GateCheck | "commit" | "generator", { count: number; reasons: Record<string, number> }>;
export const REJECTION_GATES = ["generator", ...GATE_ORDER, "commit"] as const;

export function tallyRejections(rounds: readonly Pick<RoundState, "attempts">[]): RejectionTally {
  const tally = Object.fromEntries(REJECTION_GATES.map((k) => [k, { count: 0, reasons: {} as Record<string, number> }])) as RejectionTally;
  for (const r of rounds)
    for (const a of r.attempts) {
      const t = tally[a.check];
      t.count++;
      t.reasons[a.reason] = (t.reasons[a.reason] ?? 0) + 1;
    }
  return tally;
}
