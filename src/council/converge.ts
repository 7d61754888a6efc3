import { ethicsPrompt, ethicsRules, readEthics } from "./ethics";
import type { Effect, MachineContext, MachineInput } from "./machine-types";
import { answerOf } from "../jobs/model-answer";
import type { StagePlan } from "../jobs/model-work";
import { activeMembers, type DialogRecord, type SessionState, type VoteRecord } from "./session";
import { acceptModelConsensus, acceptedAmendments, decisionConditions, synthesisPrompt, templateConsensus } from "./synthesis";
import { decide, type Ballot, type Outcome } from "./tally";
import { endWithout, enterPhase } from "./phase";

/**
 * Convergence (seed 004 step 5): the decision is the deterministic tally; a synthesis job writes the
 * consensus text (or, when it does not answer in time, a deterministic template says so); the ethics
 * review can turn an approval into `revise`; then the decision is carried out.
 */
export function closeVoting(
  state: SessionState,
  ctx: MachineContext,
  votes: readonly VoteRecord[],
  dialogs: readonly DialogRecord[],
  fx: Effect[],
) {
  const ballots: Ballot[] = votes.map((v) => ({ node_id: v.node_id, vote: v.vote, weight: v.weight, confidence: v.confidence }));
  const result = decide(ballots, ctx.rules);
  fx.push({
    kind: "feed",
    type: "council.tallied",
    payload: { session_id: state.session_id, outcome: result.outcome, tally: result.tally },
    // One tally per session, whatever happens around it.
    dedupe: `council:tally:${state.session_id}`,
  });
  if (result.outcome === "abandoned") {
    endWithout(state, "abandoned", "no_votes", ctx, fx);
    return;
  }
  state.pending = { outcome: result.outcome, confidence: result.confidence, tally: result.tally, closed_at: ctx.now.toISOString() };
  enterPhase(state, "converging", ctx, fx, { outcome: result.outcome });
  const plan = stagePlan(ctx.config, "synthesis");
  state.model_work = { ...state.model_work, synthesis: plan };
  if (ctx.config.synthesis === "off") {
    state.synthesis = {
      status: "done",
      source: "template",
      text: templateConsensus(state, dialogs, votes, state.pending),
      // `model_work` named a runtime no live runner offered: the template at once, not a job nobody runs.
      note: plan.fell_back_because === "runtime_not_offered" ? "synthesis_runtime_not_offered" : "synthesis_off",
    };
  } else {
    const jobId = ctx.newId("job");
    state.synthesis = { status: "pending", job_id: jobId, runtime: ctx.config.synthesis_runtime };
    state.deadlines.synthesis = new Date(ctx.now.getTime() + ctx.config.synthesis_timeout_ms).toISOString();
    fx.push({
      kind: "submit_job",
      purpose: "synthesis",
      job_id: jobId,
      runtime: ctx.config.synthesis_runtime,
      ...(ctx.config.synthesis_model ? { model: ctx.config.synthesis_model } : {}),
      prompt: synthesisPrompt(state, dialogs, votes, state.pending),
      timeout_ms: Math.min(ctx.config.synthesis_timeout_ms, 3_600_000),
    });
  }
  finalizeOrWait(state, ctx, { votes: [...votes], dialogs: [...dialogs] }, fx);
}

/**
 * A synthesis or ethics job ended. Only the job the session waits for counts, and only once: a
 * repeated or late notice (after the template took over) changes nothing.
 */
export function recordJobEnd(
  state: SessionState,
  input: Extract<MachineInput, { kind: "job_ended" }>,
  ctx: MachineContext,
  fx: Effect[],
): boolean {
  if (state.synthesis?.status === "pending" && state.synthesis.job_id === input.job_id) {
    const answer = answerOf(input.result);
    if (input.status === "completed" && !answer.offline && answer.text && answer.text.trim().length > 0) {
      const accepted = acceptModelConsensus(state, input.dialogs ?? [], answer.text);
      state.synthesis = {
        ...state.synthesis,
        status: "done",
        source: "model",
        text: accepted.text,
        ...(accepted.note ? { note: accepted.note } : {}),
      };
    } else {
      const note =
        input.status !== "completed"
          ? `synthesis_job_${input.status}${input.error ? `:${input.error.code}` : input.reason ? `:${input.reason}` : ""}`
          : answer.offline
            ? "synthesis_offline_runtime"
            : "synthesis_empty_answer";
      useTemplate(state, input, note);
    }
    fx.push({
      kind: "feed",
      type: "council.synthesized",
      payload: { session_id: state.session_id, job_id: input.job_id, source: state.synthesis.source, note: state.synthesis.note ?? null },
    });
    return true;
  }
  if (state.ethics?.model.status === "pending" && state.ethics.model.job_id === input.job_id) {
    const verdict = readEthics(input);
    state.ethics.model = { status: verdict.status, job_id: input.job_id, reason: verdict.reason };
    fx.push({
      kind: "feed",
      type: "council.ethics_reviewed",
      payload: { session_id: state.session_id, job_id: input.job_id, status: verdict.status, reason: verdict.reason },
    });
    return true;
  }
  return false;
}

function useTemplate(state: SessionState, data: { votes?: VoteRecord[]; dialogs?: DialogRecord[] }, note: string) {
  state.synthesis = {
    ...state.synthesis,
    status: "done",
    source: "template",
    text: templateConsensus(state, data.dialogs ?? [], data.votes ?? [], state.pending!),
    note,
  };
}

/** Moves convergence on as far as it can: template on synthesis timeout, ethics, the decision. */
export function finalizeOrWait(
  state: SessionState,
  ctx: MachineContext,
  data: { votes?: VoteRecord[]; dialogs?: DialogRecord[] },
  fx: Effect[],
): boolean {
  if (state.phase !== "converging" || !state.pending) return false;
  const nowMs = ctx.now.getTime();
  if (state.synthesis?.status === "pending") {
    if (!state.deadlines.synthesis || Date.parse(state.deadlines.synthesis) > nowMs) return false;
    if (!data.votes || !data.dialogs) return false;
    useTemplate(state, data, "synthesis_timeout");
    fx.push({
      kind: "feed",
      type: "council.synthesized",
      payload: { session_id: state.session_id, job_id: state.synthesis.job_id ?? null, source: "template", note: "synthesis_timeout" },
    });
  }
  if (!state.ethics) {
    const texts = outcomeTexts(state, data.votes ?? []);
    const rules = ethicsRules([texts.proposal, ...texts.amendments, texts.consensus, ...texts.conditions], ctx.config.ethics_denied_terms);
    const wantsModel = ctx.config.ethics_model === "model";
    const needsModel = wantsModel && state.pending.outcome === "approved" && rules.every((r) => r.passed);
    const plan = stagePlan(ctx.config, "ethics");
    state.model_work = { ...state.model_work, ethics: plan };
    state.ethics = { rules, model: { status: wantsModel ? "not_needed" : "off" } };
    if (needsModel) {
      const jobId = ctx.newId("job");
      state.ethics.model = { status: "pending", job_id: jobId };
      state.deadlines.ethics = new Date(nowMs + ctx.config.ethics_timeout_ms).toISOString();
      fx.push({
        kind: "submit_job",
        purpose: "ethics",
        job_id: jobId,
        runtime: ctx.config.ethics_runtime,
        ...(plan.model ? { model: plan.model } : {}),
        prompt: ethicsPrompt(texts),
        timeout_ms: Math.min(ctx.config.ethics_timeout_ms, 3_600_000),
      });
      return true;
    }
  }
  if (state.ethics.model.status === "pending") {
    if (!state.deadlines.ethics || Date.parse(state.deadlines.ethics) > nowMs) return false;
    state.ethics.model = { ...state.ethics.model, status: "unavailable", reason: "ethics_timeout" };
  }
  finalize(state, ctx, data.votes ?? [], fx);
  return true;
}

/**
 * How a stage is decided now: the resolved plan (`effectiveCouncilConfig`), or, for a config given
 * without one (the machine's own tests), what its keys say.
 */
function stagePlan(config: MachineContext["config"], stage: "synthesis" | "ethics"): StagePlan {
  const given = config.model_work?.[stage];
  if (given) return given;
  const [mode, runtime] =
    stage === "synthesis" ? [config.synthesis, config.synthesis_runtime] : [config.ethics_model, config.ethics_runtime];
  if (mode === "off") return { on_model: false, set_by: "stage", fell_back_because: "stage_off" };
  if (runtime === "offline") return { on_model: false, set_by: "stage", runtime, fell_back_because: "offline_runtime" };
  return { on_model: true, set_by: "stage", runtime };
}

function outcomeTexts(state: SessionState, votes: readonly VoteRecord[]) {
  return {
    proposal: `${state.proposal.title}\n${state.proposal.body}`,
    amendments: acceptedAmendments(state).map((a) => `${a.type} ${a.target}: ${a.content}`),
    consensus: state.synthesis?.text ?? "",
    conditions: decisionConditions(votes, state.pending!.outcome),
  };
}

/** Why the ethics review turns an approval into `revise`, or null when it does not. */
function ethicsObjection(state: SessionState): string | null {
  const e = state.ethics!;
  const failed = e.rules.find((r) => !r.passed);
  if (failed) return `ethics_rule:${failed.rule}${failed.detail ? `:${failed.detail}` : ""}`;
  if (e.model.status === "revise") return `ethics_model:${e.model.reason ?? "revise"}`;
  if (e.model.status === "unavailable") return `ethics_model_unavailable:${e.model.reason ?? "unknown"}`;
  return null;
}

function finalize(state: SessionState, ctx: MachineContext, votes: readonly VoteRecord[], fx: Effect[]) {
  const pending = state.pending!;
  const objection = pending.outcome === "approved" ? ethicsObjection(state) : null;
  const outcome: Outcome = objection ? "revise" : pending.outcome;
  if (objection) state.ethics!.revised_because = objection;
  state.decision = {
    outcome,
    tallied_outcome: pending.outcome,
    confidence: pending.confidence,
    consensus: state.synthesis!.text!,
    synthesis_source: state.synthesis!.source!,
    ...(state.synthesis!.note ? { synthesis_note: state.synthesis!.note } : {}),
    quality_score: qualityScore(state, pending.tally, pending.outcome),
    conditions: decisionConditions(votes, pending.outcome),
    ethics: state.ethics!,
    tally: pending.tally,
    decided_at: ctx.now.toISOString(),
  };
  enterPhase(state, outcome, ctx, fx);
  fx.push(
    {
      kind: "feed",
      type: "council.decided",
      payload: {
        session_id: state.session_id,
        proposal_id: state.proposal_id,
        outcome,
        tallied_outcome: pending.outcome,
        confidence: pending.confidence,
        synthesis_source: state.decision.synthesis_source,
        ...(objection ? { revised_because: objection } : {}),
      },
    },
    { kind: "term_sample" },
    ...decisionEffects(state, { restored: false }),
  );
}

/**
 * The seed's "決議の自動実行": proposer and members are told through pending events; an approval
 * creates the swarm task or approves the project and may crystallise a principle. Also what a
 * lapsed veto re-runs.
 */
export function decisionEffects(state: SessionState, opts: { restored: boolean }): Effect[] {
  const d = state.decision!;
  const payload = {
    session_id: state.session_id,
    proposal_id: state.proposal_id,
    outcome: d.outcome,
    quality_score: d.quality_score,
    confidence: d.confidence,
    consensus: d.consensus,
    conditions: d.conditions,
    synthesis_source: d.synthesis_source,
    ...(opts.restored ? { restored_after_veto: true } : {}),
  };
  const fx: Effect[] = [
    { kind: "proposal_status", status: d.outcome },
    { kind: "notify", to: [state.proposer_id], type: "council_decision", payload },
    { kind: "notify", to: activeMembers(state).map((m) => m.node_id), type: "council_decision_notification", payload },
  ];
  if (state.kind === "project") {
    fx.push(
      d.outcome === "approved"
        ? { kind: "project_status", to: "approved", from: ["council_review", "proposed"] }
        : d.outcome === "rejected"
          ? { kind: "project_status", to: "archived", from: ["council_review", "proposed"] }
          : { kind: "project_status", to: "proposed", from: ["council_review"] },
    );
  }
  if (d.outcome === "approved") fx.push({ kind: "execute_decision" });
  fx.push({ kind: "reputation", event: "decided" });
  return fx;
}

/**
 * The decision's quality score in [0, 1]: the mean of how many members answered the diverge
 * invitation, how many member seats voted, and how decisive the winning side was. Unknown (null)
 * when any part cannot be measured.
 */
export function qualityScore(
  state: SessionState,
  tally: { approve: number; reject: number; revise: number; total: number },
  outcome: Outcome,
): number | null {
  const invited = state.members.length;
  const answered = state.members.filter((m) => m.responded_at).length;
  const seats = state.electorate?.members.length ?? 0;
  const voted = activeMembers(state).filter((m) => m.voted).length;
  if (invited === 0 || seats === 0 || tally.total <= 0) return null;
  const winning = (outcome === "approved" ? tally.approve : outcome === "rejected" ? tally.reject : tally.revise) / tally.total;
  const score = (answered / invited + Math.min(1, voted / seats) + winning) / 3;
  return Math.round(score * 1000) / 1000;
}
