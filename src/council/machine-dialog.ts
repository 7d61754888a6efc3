import type { DialogBody, Effect, MachineContext, MachineInput, Refusal } from "./machine-types";
import type { CouncilRules } from "./rules";
import {
  activeMembers,
  PHASE_DIALOGS,
  type DialogRecord,
  type DialogType,
  type Phase,
  type SessionMember,
  type SessionState,
} from "./session";

/**
 * Dialog input to the deliberation machine (part of `advance`, see machine.ts), and the fold of
 * dialogs that were written without the session's single writer (`absorbDialogs`).
 *
 * A dialog reaches the trail one of two ways:
 * - through the CouncilSession object: `applyDialog` validates it against the state, records it and
 *   updates the state in the same save (seconds, amendments, votes, replies to an amendment, and any
 *   dialog the direct path did not take);
 * - directly (`direct-dialog.ts`): one guarded INSERT checks in SQL what `applyDialog` would check
 *   for a plain contribution (phase, seat, rate limit, reply target). Such a dialog changes the
 *   state only through facts the trail keeps (who posted, in which phase, when), so the object folds
 *   it in at its next check with `absorbDialogs`, exactly as `applyDialog` would have at post time.
 *
 * `state.dialog_count` is the fold's watermark: the dialogs with `seq` up to it are in the state,
 * later ones are not yet. Every save of the session is guarded on "no dialog after the watermark"
 * (session-store `sessionUpdate`), so a direct dialog always lands in the phase and membership the
 * state had when it was written and is folded in before any change of either.
 */

/** Contributions that change nothing but the trail until folded in: the direct path takes these. */
export const DIRECT_DIALOG_TYPES = ["assess", "challenge", "agree", "develop"] as const satisfies readonly DialogType[];

/** Phases in which `type` is taken (from PHASE_DIALOGS), e.g. diverge and challenge for `assess`. */
export function phasesTaking(type: DialogType): Phase[] {
  return (Object.entries(PHASE_DIALOGS) as [Phase, readonly DialogType[]][]).filter(([, types]) => types.includes(type)).map(([p]) => p);
}

/** Phases in which a direct dialog can be written, so in which the state may have dialogs to fold. */
export const DIRECT_PHASES: readonly Phase[] = [...new Set(DIRECT_DIALOG_TYPES.flatMap(phasesTaking))];

export function refuse(code: Refusal["code"], detail: string): Refusal {
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

export function applyDialog(
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

  const dialog: DialogRecord = {
    id: ctx.newId("dlg"),
    seq: state.dialog_count + 1,
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
  fx.push({ kind: "record_dialog", dialog }, { kind: "touch_node", node_id });
  noteDialog(state, dialog, speaker, ctx.config.progress_debounce_ms, fx, true);

  if (body.dialog_type === "vote") {
    const vote = {
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
  return null;
}

/**
 * Folds dialogs already in the trail (written by the direct path) into the state, in `seq` order,
 * with the same bookkeeping `applyDialog` does when it records one: counts, a member's response,
 * support for an amendment, the debounced progress check. They were checked when written, and the
 * direct write also did what their effects would (the node's last dialog time, the term's response
 * counter for a member's first response), so folding them in has no effects.
 */
export function absorbDialogs(
  session: SessionState,
  rows: readonly DialogRecord[],
  ctx: { rules: Pick<CouncilRules, "maxDialogsPerNode">; config: { progress_debounce_ms: number } },
): { state: SessionState } {
  const state = structuredClone(session);
  const effects: Effect[] = [];
  for (const dialog of rows) {
    // The watermark never skips: seq is MAX + 1 at every insert, and nothing is ever deleted.
    if (dialog.seq !== state.dialog_count + 1) {
      throw new Error(`session ${state.session_id}: dialog seq ${dialog.seq} does not follow ${state.dialog_count}`);
    }
    noteDialog(state, dialog, speakerOf(state, dialog.node_id, null), ctx.config.progress_debounce_ms, effects, false);
  }
  return { state };
}

/** What recording `dialog` changes in the state (whoever wrote the row); `count`: emit its term counts. */
function noteDialog(state: SessionState, dialog: DialogRecord, speaker: Speaker, debounceMs: number, fx: Effect[], count: boolean) {
  const { node_id } = dialog;
  state.dialog_count = dialog.seq;
  state.dialogs_by_node[node_id] = (state.dialogs_by_node[node_id] ?? 0) + 1;
  if (speaker.role === "member") noteMemberPost(state, speaker.member, dialog, count ? fx : []);
  if (dialog.dialog_type === "amend") {
    state.amendments.push({
      amendment_id: dialog.id,
      by: node_id,
      type: dialog.amendment_type!,
      target: dialog.amendment_target!,
      content: dialog.amendment_content!,
      created_at: dialog.created_at,
      support: [],
      objections: [],
      status: "proposed",
    });
  }
  // Agreeing with or challenging an amendment is how members support or oppose it.
  const amendment = dialog.reply_to ? state.amendments.find((a) => a.amendment_id === dialog.reply_to) : undefined;
  if (
    amendment &&
    speaker.role === "member" &&
    node_id !== amendment.by &&
    (dialog.dialog_type === "agree" || dialog.dialog_type === "challenge")
  ) {
    amendment.support = amendment.support.filter((n) => n !== node_id);
    amendment.objections = amendment.objections.filter((n) => n !== node_id);
    (dialog.dialog_type === "agree" ? amendment.support : amendment.objections).push(node_id);
  }
  state.progress_due_at ??= new Date(Date.parse(dialog.created_at) + debounceMs).toISOString();
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

function noteMemberPost(state: SessionState, member: SessionMember, dialog: DialogRecord, fx: Effect[]) {
  const counts = { requests: [] as string[], responses: [] as string[] };
  const at = dialog.created_at;
  if ((dialog.phase === "diverge" || dialog.phase === "challenge") && !member.responded_at && dialog.dialog_type !== "amend") {
    // A late first assessment made in challenge still answers the diverge invitation.
    member.responded_at = at;
    state.first_response_at ??= at;
    if (member.source === "term") counts.responses.push(member.node_id);
  }
  if (dialog.phase === "challenge") member.challenge_posted = true;
  if (dialog.dialog_type === "vote") {
    member.voted = true;
    if (member.source === "term") counts.responses.push(member.node_id);
  }
  if (counts.responses.length > 0) fx.push({ kind: "term_counts", ...counts });
}
