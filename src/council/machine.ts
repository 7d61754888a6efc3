import { proposalHash } from "./hash";
import type { Advanced, DialogBody, Effect, MachineContext, MachineInput, Refusal } from "./machine-types";
import { MINUTE, HOUR } from "./rules";
import { pickReplacements } from "./selection";
import {
  activeMembers,
  DECIDED_PHASES,
  OPEN_PHASES,
  PHASE_DIALOGS,
  type DeadlineName,
  type DialogRecord,
  type Phase,
  type SessionMember,
  type SessionState,
  type VoteRecord,
} from "./session";
import { closeVoting, decisionEffects, finalizeOrWait, recordJobEnd } from "./converge";
import { endWithout, enterPhase } from "./phase";

/**
 * The deliberation state machine (seed 004 "審議プロセス", API.md "Clarifications"), pure:
 * `advance(session, input, ctx)` returns the next state and the effects to carry out, or a refusal.
 * Dialog input only records (and may mark a second, a response, a vote); phase changes happen in a
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
// Dialog input

function refuse(code: Refusal["code"], detail: string): Refusal {
  return { ok: false, code, detail };
}

type Speaker = { role: "proposer" } | { role: "member"; member: SessionMember } | { role: "community" } | { role: "none" };

function speakerOf(state: SessionState, nodeId: string, voter: { kind: string } | null): Speaker {
  if (nodeId === state.proposer_id) return { role: "proposer" };
  const member = activeMembers(state).find((m) => m.node_id === nodeId);
  if (member) return { role: "member", member };
  if (voter?.kind === "community") return { role: "community" };
  return { role: "none" };
}

function applyDialog(
  state: SessionState,
  input: Extract<MachineInput, { kind: "dialog" }>,
  ctx: MachineContext,
  fx: Effect[],
): Refusal | null {
  const { body, node_id } = input;
  const now = ctx.now.toISOString();
  const allowed = PHASE_DIALOGS[state.phase];
  if (!allowed) return refuse("wrong_phase", `The session is ${state.phase}; it takes no dialog`);
  if (!allowed.includes(body.dialog_type)) {
    return refuse("wrong_phase", `A ${body.dialog_type} dialog is not taken in the ${state.phase} phase (it takes ${allowed.join(", ")})`);
  }
  const speaker = speakerOf(state, node_id, input.voter);
  if (speaker.role === "none") return refuse("not_eligible", "Only the session's members and the proposer take part in this phase");
  if ((state.dialogs_by_node[node_id] ?? 0) >= ctx.rules.maxDialogsPerNode) {
    return refuse("rate_limited", `A node posts at most ${ctx.rules.maxDialogsPerNode} dialogs in one session`);
  }
  const shapeError = dialogShapeError(body);
  if (shapeError) return refuse("validation_failed", shapeError);
  if (body.reply_to !== undefined && !input.reply_to_exists)
    return refuse("validation_failed", "reply_to does not name a dialog of this session");

  let vote: VoteRecord | undefined;
  switch (body.dialog_type) {
    case "second":
      if (speaker.role !== "member") return refuse("not_eligible", "A proposal is seconded by another member of the council");
      state.seconded ??= { by: node_id, at: now, auto: false, reason: "seconded" };
      state.first_response_at ??= now;
      break;
    case "vote": {
      if (speaker.role === "proposer") return refuse("not_eligible", "The proposer does not vote on their own proposal");
      if (!input.voter) return refuse("not_eligible", "This node is not in the electorate frozen when voting opened");
      if (body.proposal_hash !== undefined && body.proposal_hash !== state.proposal_hash) {
        return refuse("stale_proposal", `The ballot is for another text; the proposal voters see now has hash ${state.proposal_hash}`);
      }
      if (input.already_voted) return refuse("already_voted", "This node has already voted in this session");
      break;
    }
    default:
      if (speaker.role === "community") return refuse("not_eligible", "Community voters take part in the voting phase only");
      if (body.dialog_type === "amend" && state.phase !== "challenge")
        return refuse("wrong_phase", "Amendments are made in the challenge phase");
  }

  const seq = state.dialog_count + 1;
  const dialog: DialogRecord = {
    id: ctx.newId("dlg"),
    seq,
    node_id,
    role: speaker.role === "member" ? speaker.member.role : speaker.role === "proposer" ? "proposer" : "community",
    phase: state.phase,
    dialog_type: body.dialog_type,
    content: body.content ?? null,
    reply_to: body.reply_to ?? null,
    amendment_type: body.amendment_type ?? null,
    amendment_target: body.amendment_target ?? null,
    amendment_content: body.amendment_content ?? null,
    created_at: now,
  };
  state.dialog_count = seq;
  state.dialogs_by_node[node_id] = (state.dialogs_by_node[node_id] ?? 0) + 1;
  fx.push({ kind: "record_dialog", dialog }, { kind: "touch_node", node_id });

  if (speaker.role === "member") noteMemberPost(state, speaker.member, dialog, now, fx);
  if (body.dialog_type === "amend") {
    state.amendments.push({
      amendment_id: dialog.id,
      by: node_id,
      type: body.amendment_type!,
      target: body.amendment_target!,
      content: body.amendment_content!,
      created_at: now,
      support: [],
      objections: [],
      status: "proposed",
    });
  }
  // Agreeing with or challenging an amendment is how members support or oppose it.
  const amendment = body.reply_to ? state.amendments.find((a) => a.amendment_id === body.reply_to) : undefined;
  if (
    amendment &&
    speaker.role === "member" &&
    node_id !== amendment.by &&
    (body.dialog_type === "agree" || body.dialog_type === "challenge")
  ) {
    amendment.support = amendment.support.filter((n) => n !== node_id);
    amendment.objections = amendment.objections.filter((n) => n !== node_id);
    (body.dialog_type === "agree" ? amendment.support : amendment.objections).push(node_id);
  }
  if (body.dialog_type === "vote") {
    vote = {
      node_id,
      dialog_id: dialog.id,
      kind: input.voter!.kind,
      vote: body.vote!,
      weight: input.voter!.weight,
      confidence: body.confidence!,
      conditions: body.conditions ?? [],
      reasoning: body.reasoning ?? null,
      proposal_hash: state.proposal_hash!,
      created_at: now,
    };
    fx.push(
      { kind: "record_vote", vote },
      { kind: "feed", type: "council.vote_cast", payload: { session_id: state.session_id, node_id, kind: vote.kind, weight: vote.weight } },
    );
  }
  state.progress_due_at ??= new Date(ctx.now.getTime() + ctx.config.progress_debounce_ms).toISOString();
  return null;
}

/** Structural rules the request schema also checks; repeated here so every entry point gets them. */
function dialogShapeError(body: DialogBody): string | null {
  if (body.dialog_type === "amend" && (!body.amendment_type || !body.amendment_target || !body.amendment_content)) {
    return "an amend dialog needs amendment_type, amendment_target and amendment_content";
  }
  if (body.dialog_type === "vote") {
    if (!body.vote) return "a vote dialog needs vote";
    if (body.confidence === undefined || !(body.confidence >= 0 && body.confidence <= 1)) return "a vote dialog needs confidence in [0, 1]";
  }
  return null;
}

function noteMemberPost(state: SessionState, member: SessionMember, dialog: DialogRecord, now: string, fx: Effect[]) {
  const counts = { requests: [] as string[], responses: [] as string[] };
  if ((state.phase === "diverge" || state.phase === "challenge") && !member.responded_at && dialog.dialog_type !== "amend") {
    // A late first assessment made in challenge still answers the diverge invitation.
    member.responded_at = now;
    state.first_response_at ??= now;
    if (member.source === "term") counts.responses.push(member.node_id);
  }
  if (state.phase === "challenge") member.challenge_posted = true;
  if (dialog.dialog_type === "vote") {
    member.voted = true;
    if (member.source === "term") counts.responses.push(member.node_id);
  }
  if (counts.responses.length > 0) fx.push({ kind: "term_counts", ...counts });
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

function veto(state: SessionState, input: Extract<MachineInput, { kind: "veto" }>, ctx: MachineContext, fx: Effect[]): Refusal | null {
  if (state.phase === "vetoed") return refuse("wrong_phase", "The session is already vetoed");
  if (state.phase === "tabled" || state.phase === "abandoned") return refuse("wrong_phase", `A ${state.phase} session has nothing to veto`);
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
  fx.push({ kind: "proposal_status", status: "vetoed" });
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
  fx.push({ kind: "feed", type: "council.veto_lapsed", payload: { session_id: state.session_id, restored_phase: v.phase_before } });
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
