import { proposalHash } from "./hash";
import { applyDialog, refuse } from "./machine-dialog";
import type { Advanced, Effect, MachineContext, MachineInput, Refusal } from "./machine-types";
import { MINUTE, HOUR } from "./rules";
import { pickReplacements } from "./selection";
import {
  activeMembers,
  DECIDED_PHASES,
  OPEN_PHASES,
  type DeadlineName,
  type Phase,
  type SessionMember,
  type SessionState,
} from "./session";
import { closeVoting, decisionEffects, finalizeOrWait, recordJobEnd } from "./converge";
import { endWithout, enterPhase } from "./phase";

/**
 * The deliberation state machine (seed 004 "審議プロセス", API.md "Clarifications"), pure:
 * `advance(session, input, ctx)` returns the next state and the effects to carry out, or a refusal.
 * Dialog input (machine-dialog.ts) only records (and may mark a second, a response, a vote); phase changes happen in a
 * `check`, which the caller runs at most `progress_debounce_ms` after input, on deadlines and on the
 * minute tick. Checks are idempotent: a check with nothing due changes nothing.
 */
export function advance(session: SessionState, input: MachineInput, ctx: MachineContext): Advanced | Refusal {
  const state = structuredClone(session);
  const effects: Effect[] = [];
  switch (input.kind) {
    case "dialog": {
      const refusal = applyDialog(state, input, ctx, effects);
      return refusal ?? { ok: true, state, effects, changed: true };
    }
    case "check": {
      const changed = runCheck(state, ctx, input, effects);
      return { ok: true, state, effects, changed };
    }
    case "job_ended": {
      const recorded = recordJobEnd(state, input, ctx, effects);
      const progressed = recorded && state.phase === "converging" ? finalizeOrWait(state, ctx, input, effects) : false;
      return { ok: true, state, effects, changed: recorded || progressed };
    }
    case "veto":
      return veto(state, input, ctx, effects) ?? { ok: true, state, effects, changed: true };
    case "ratify":
      return ratify(state, input, ctx, effects) ?? { ok: true, state, effects, changed: true };
  }
}

// ---------------------------------------------------------------------------------------------
// Checks: deadlines and progress

function iso(ms: number) {
  return new Date(ms).toISOString();
}

function due(state: SessionState, name: DeadlineName, nowMs: number): boolean {
  const at = state.deadlines[name];
  return at !== undefined && Date.parse(at) <= nowMs;
}

function runCheck(state: SessionState, ctx: MachineContext, input: Extract<MachineInput, { kind: "check" }>, fx: Effect[]): boolean {
  const nowMs = ctx.now.getTime();
  let changed = false;
  if (state.progress_due_at && Date.parse(state.progress_due_at) <= nowMs) {
    delete state.progress_due_at;
    changed = true;
  }
  if (state.phase === "vetoed") return lapseIfDue(state, ctx, fx) || changed;
  // Several steps can be due at once (e.g. a tick long after the last one); bounded, never a loop.
  for (let i = 0; i < 8; i++) {
    if (!step(state, ctx, input, fx)) break;
    changed = true;
  }
  return changed;
}

function step(state: SessionState, ctx: MachineContext, input: Extract<MachineInput, { kind: "check" }>, fx: Effect[]): boolean {
  const nowMs = ctx.now.getTime();
  switch (state.phase) {
    case "seconding":
      if (state.seconded) {
        openDiverge(state, ctx, fx);
        return true;
      }
      if (due(state, "seconding", nowMs)) {
        endWithout(state, "tabled", "not_seconded", ctx, fx);
        return true;
      }
      return false;
    case "diverge":
      return stepDiverge(state, ctx, input, fx);
    case "challenge": {
      const responders = activeMembers(state).filter((m) => m.responded_at);
      if (responders.every((m) => m.challenge_posted) || due(state, "challenge", nowMs)) {
        openVoting(state, ctx, fx);
        return true;
      }
      return false;
    }
    case "voting": {
      const electorate = new Set(state.electorate?.members.map((m) => m.node_id) ?? []);
      const allVoted = activeMembers(state)
        .filter((m) => electorate.has(m.node_id))
        .every((m) => m.voted);
      if (!allVoted && !due(state, "voting", nowMs)) return false;
      if (!input.votes || !input.dialogs) return askAgain(state, ctx);
      closeVoting(state, ctx, input.votes, input.dialogs, fx);
      return true;
    }
    case "converging":
      return finalizeOrWait(state, ctx, input, fx);
    default:
      return false;
  }
}

/** Diverge: every member assesses; the first response must come within an hour of the session start. */
export function openDiverge(state: SessionState, ctx: MachineContext, fx: Effect[]) {
  const nowMs = ctx.now.getTime();
  enterPhase(state, "diverge", ctx, fx);
  state.deadlines.diverge = iso(nowMs + ctx.rules.divergeReplaceMinutes * MINUTE);
  const members = activeMembers(state);
  fx.push({ kind: "notify", to: members.map((m) => m.node_id), type: "council_invite", payload: invitePayload(state) });
  const fromTerm = members.filter((m) => m.source === "term").map((m) => m.node_id);
  if (fromTerm.length > 0) fx.push({ kind: "term_counts", requests: fromTerm, responses: [] });
}

export function invitePayload(state: SessionState, extra: Record<string, unknown> = {}) {
  return {
    session_id: state.session_id,
    proposal_id: state.proposal_id,
    kind: state.kind,
    title: state.proposal.title,
    body: state.proposal.body,
    proposer_id: state.proposer_id,
    respond_by: state.deadlines.diverge,
    ...extra,
  };
}

function stepDiverge(state: SessionState, ctx: MachineContext, input: Extract<MachineInput, { kind: "check" }>, fx: Effect[]): boolean {
  const nowMs = ctx.now.getTime();
  const members = activeMembers(state);
  const silent = members.filter((m) => !m.responded_at);
  if (silent.length === 0) {
    openChallenge(state, ctx, fx);
    return true;
  }
  if (!state.first_response_at && due(state, "no_response", nowMs)) {
    endWithout(state, "abandoned", "no_response", ctx, fx);
    return true;
  }
  if (!due(state, "diverge", nowMs)) return false;
  if (state.replacement_rounds < ctx.rules.maxReplacementRounds) {
    if (!input.pool) return askAgain(state, ctx);
    const involved = new Set([state.proposer_id, ...state.members.map((m) => m.node_id)]);
    const picks = pickReplacements(input.pool, involved, silent.length, nowMs, ctx.rules);
    if (picks.length > 0) {
      replace(state, silent.slice(0, picks.length), picks, ctx, fx);
      return true;
    }
  }
  // Replacement rounds exhausted (or nobody left to ask): go on with whoever answered, if anyone did.
  if (members.some((m) => m.responded_at)) {
    openChallenge(state, ctx, fx, { unresponsive: silent.map((m) => m.node_id) });
    return true;
  }
  endWithout(state, "abandoned", "replacements_exhausted", ctx, fx);
  return true;
}

/** The check lacked data it did not know it would need (a phase changed within it): look again at once. */
function askAgain(state: SessionState, ctx: MachineContext): false {
  state.progress_due_at = ctx.now.toISOString();
  return false;
}

function replace(state: SessionState, out: SessionMember[], picks: string[], ctx: MachineContext, fx: Effect[]) {
  const now = ctx.now.toISOString();
  state.replacement_rounds += 1;
  state.deadlines.diverge = iso(ctx.now.getTime() + ctx.rules.divergeReplaceMinutes * MINUTE);
  out.forEach((old, i) => {
    const node_id = picks[i]!;
    old.replaced_by = node_id;
    old.replaced_at = now;
    // The devil's advocate's replacement inherits the role: a session always has exactly one.
    state.members.push({ node_id, role: old.role, source: "replacement", joined_at: now, replaces: old.node_id });
    fx.push({
      kind: "notify",
      to: [node_id],
      type: "council_invite",
      payload: invitePayload(state, { role: old.role, replacement_for: old.node_id, round: state.replacement_rounds }),
    });
  });
  fx.push({
    kind: "feed",
    type: "council.members_replaced",
    payload: {
      session_id: state.session_id,
      round: state.replacement_rounds,
      replaced: out.map((m, i) => ({ node_id: m.node_id, replaced_by: picks[i] })),
    },
  });
}

function openChallenge(state: SessionState, ctx: MachineContext, fx: Effect[], detail: Record<string, unknown> = {}) {
  enterPhase(state, "challenge", ctx, fx, detail);
  state.deadlines.challenge = iso(ctx.now.getTime() + ctx.rules.challengeMinutes * MINUTE);
}

/**
 * Voting opens: amendments are settled (accepted when more members other than the author agreed
 * than challenged it, and at least one agreed), the text voters see is hashed, and the electorate
 * (members at 1.0, eligible community nodes at 0.5) is frozen.
 */
function openVoting(state: SessionState, ctx: MachineContext, fx: Effect[]) {
  for (const a of state.amendments) a.status = a.support.length > 0 && a.support.length > a.objections.length ? "accepted" : "rejected";
  const accepted = state.amendments.filter((a) => a.status === "accepted");
  state.proposal_hash = proposalHash({ title: state.proposal.title, body: state.proposal.body, amendments: accepted });
  enterPhase(state, "voting", ctx, fx, { proposal_hash: state.proposal_hash });
  state.deadlines.voting = iso(ctx.now.getTime() + ctx.rules.votingMinutes * MINUTE);
  const members = activeMembers(state).map((m) => ({ node_id: m.node_id, weight: ctx.rules.memberWeight }));
  state.electorate = { members, community_weight: ctx.rules.communityWeight, frozen_at: ctx.now.toISOString() };
  fx.push({
    kind: "open_voting",
    members,
    community: {
      weight: ctx.rules.communityWeight,
      min_reputation: ctx.rules.voteMinReputation,
      min_tier: ctx.rules.voteMinTier,
      exclude: [state.proposer_id, ...state.members.map((m) => m.node_id)],
    },
    payload: {
      session_id: state.session_id,
      proposal_id: state.proposal_id,
      title: state.proposal.title,
      body: state.proposal.body,
      proposal_hash: state.proposal_hash,
      amendments: state.amendments.map((a) => ({
        amendment_id: a.amendment_id,
        by: a.by,
        type: a.type,
        target: a.target,
        content: a.content,
        status: a.status,
      })),
      vote_by: state.deadlines.voting,
    },
  });
  const fromTerm = activeMembers(state)
    .filter((m) => m.source === "term")
    .map((m) => m.node_id);
  if (fromTerm.length > 0) fx.push({ kind: "term_counts", requests: fromTerm, responses: [] });
}

// ---------------------------------------------------------------------------------------------
// Veto (API.md "Beyond the seeds")

/**
 * One veto per session (issue 18): once a veto lapsed, the session is final against vetoes, so an
 * admin cannot suppress a decision for ever by vetoing it again every 72 hours (and the one veto
 * record keeps its history). A project session's save also checks that its project has not started.
 */
function veto(state: SessionState, input: Extract<MachineInput, { kind: "veto" }>, ctx: MachineContext, fx: Effect[]): Refusal | null {
  if (state.phase === "vetoed") return refuse("wrong_phase", "The session is already vetoed");
  if (state.veto?.status === "lapsed") {
    return refuse(
      "veto_lapsed",
      `A veto of this session lapsed unratified at ${state.veto.lapsed_at}; the session is final against vetoes`,
    );
  }
  if (state.phase === "tabled" || state.phase === "abandoned") return refuse("wrong_phase", `A ${state.phase} session has nothing to veto`);
  if (state.kind === "project" && state.project_id) fx.push({ kind: "require_project_not_started" });
  const now = ctx.now.toISOString();
  const before = state.phase;
  state.veto = {
    by: input.by,
    reason: input.reason,
    at: now,
    ratify_by: iso(ctx.now.getTime() + ctx.config.veto_ratify_hours * HOUR),
    status: "pending_ratification",
    phase_before: before,
  };
  enterPhase(state, "vetoed", ctx, fx, { by: input.by, reason: input.reason });
  fx.push({ kind: "proposal_status", status: "vetoed" }, { kind: "reputation", event: "vetoed" });
  if (state.decision?.outcome === "approved") fx.push({ kind: "revoke_decision" });
  if (state.kind === "project") fx.push({ kind: "project_status", to: "proposed", from: ["council_review", "approved"] });
  const payload = {
    session_id: state.session_id,
    proposal_id: state.proposal_id,
    outcome: "vetoed",
    reason: input.reason,
    ratify_by: state.veto.ratify_by,
  };
  fx.push(
    { kind: "notify", to: [state.proposer_id], type: "council_decision", payload },
    { kind: "notify", to: activeMembers(state).map((m) => m.node_id), type: "council_decision_notification", payload },
    {
      kind: "feed",
      type: "council.vetoed",
      payload: { session_id: state.session_id, by: input.by, reason: input.reason, phase_before: before, ratify_by: state.veto.ratify_by },
    },
  );
  return null;
}

function ratify(state: SessionState, input: Extract<MachineInput, { kind: "ratify" }>, ctx: MachineContext, fx: Effect[]): Refusal | null {
  const v = state.veto;
  if (state.phase !== "vetoed" || !v || v.status !== "pending_ratification")
    return refuse("wrong_phase", "There is no veto awaiting ratification");
  if (Date.parse(v.ratify_by) <= ctx.now.getTime()) return refuse("wrong_phase", "The veto's ratification window has closed");
  if (input.by === v.by) return refuse("forbidden", "A veto is ratified by a different admin than the one who cast it");
  v.status = "ratified";
  v.ratified_by = input.by;
  v.ratified_at = ctx.now.toISOString();
  fx.push({ kind: "feed", type: "council.veto_ratified", payload: { session_id: state.session_id, by: input.by } });
  return null;
}

/** An unratified veto lapses: the session returns to where it was and a decision's effects run again. */
function lapseIfDue(state: SessionState, ctx: MachineContext, fx: Effect[]): boolean {
  const v = state.veto;
  if (!v || v.status !== "pending_ratification" || Date.parse(v.ratify_by) > ctx.now.getTime()) return false;
  v.status = "lapsed";
  v.lapsed_at = ctx.now.toISOString();
  enterPhase(state, v.phase_before, ctx, fx, { veto_lapsed: true });
  fx.push(
    { kind: "feed", type: "council.veto_lapsed", payload: { session_id: state.session_id, restored_phase: v.phase_before } },
    { kind: "reputation", event: "veto_lapsed" },
  );
  if (DECIDED_PHASES.includes(v.phase_before) && state.decision) {
    fx.push(...decisionEffects(state, { restored: true }));
    return true;
  }
  // Vetoed mid-deliberation: the interrupted phase gets its full window again from now.
  fx.push({ kind: "proposal_status", status: "deliberating" });
  if (state.kind === "project") fx.push({ kind: "project_status", to: "council_review", from: ["proposed"] });
  restartWindow(state, ctx);
  return true;
}

function restartWindow(state: SessionState, ctx: MachineContext) {
  const nowMs = ctx.now.getTime();
  const minutes: Partial<Record<Phase, [DeadlineName, number]>> = {
    seconding: ["seconding", ctx.rules.secondingMinutes],
    diverge: ["diverge", ctx.rules.divergeReplaceMinutes],
    challenge: ["challenge", ctx.rules.challengeMinutes],
    voting: ["voting", ctx.rules.votingMinutes],
  };
  const w = minutes[state.phase];
  if (w) state.deadlines[w[0]] = iso(nowMs + w[1] * MINUTE);
  if (state.deadlines.no_response) state.deadlines.no_response = iso(nowMs + ctx.rules.noResponseAbandonMinutes * MINUTE);
  if (state.phase === "converging" && state.synthesis?.status === "pending")
    state.deadlines.synthesis = iso(nowMs + ctx.config.synthesis_timeout_ms);
  if (state.phase === "converging" && state.ethics?.model.status === "pending")
    state.deadlines.ethics = iso(nowMs + ctx.config.ethics_timeout_ms);
}

// ---------------------------------------------------------------------------------------------
// When to look again

/** The earliest time a check could change something; null when the session needs no more checks. */
export function nextCheckAt(state: SessionState): string | null {
  const times: string[] = [];
  if (state.phase === "vetoed") {
    if (state.veto?.status === "pending_ratification") times.push(state.veto.ratify_by);
  } else if (OPEN_PHASES.includes(state.phase)) {
    if (state.progress_due_at) times.push(state.progress_due_at);
    const d = state.deadlines;
    const byPhase: Partial<Record<Phase, (string | undefined)[]>> = {
      seconding: [d.seconding],
      diverge: [d.diverge, state.first_response_at ? undefined : d.no_response],
      challenge: [d.challenge],
      voting: [d.voting],
      converging: [
        state.synthesis?.status === "pending" ? d.synthesis : undefined,
        state.ethics?.model.status === "pending" ? d.ethics : undefined,
        // Nothing left to wait for (a veto lapsed after the job it interrupted answered): finish now.
        state.synthesis?.status !== "pending" && state.ethics?.model.status !== "pending" ? state.phase_started_at : undefined,
      ],
    };
    for (const t of byPhase[state.phase] ?? []) if (t) times.push(t);
  }
  return times.length > 0 ? times.reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b)) : null;
}

/** What a check at `nowMs` will need loaded: the candidate pool (replacements), ballots and dialogs. */
export function checkNeeds(state: SessionState, nowMs: number, rules: { maxReplacementRounds: number }) {
  const pool =
    state.phase === "diverge" &&
    due(state, "diverge", nowMs) &&
    state.replacement_rounds < rules.maxReplacementRounds &&
    activeMembers(state).some((m) => !m.responded_at);
  const trail = state.phase === "voting" || state.phase === "converging";
  return { pool, votes: trail, dialogs: trail };
}
