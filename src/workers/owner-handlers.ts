import { councilProposalJobEnded, councilSessionJobEnded } from "../council/jobs";
import { evalTick, onEvalJobEnd } from "../eval/run";
import { loadClock } from "../lib/clock";
import { onAeeJobEnd } from "../evolution/aee-run";
import { onSettleJobEnd } from "../evolution/aee-settle";
import { onGvuJobEnd } from "../evolution/gvu-round";
import { onConsolidationJobEnd } from "../evolution/soul-consolidation-run";
import { onReflectionJobEnd } from "../evolution/reflection-handler";
import { recordRunSoulGuard } from "../evolution/soul-guard";
import { onReplyJobEnd } from "../conversations/replies";
import type { Env } from "../env";
import type { JobEnd, OwnerHandler } from "../jobs/job-end";
import type { OwnerKind } from "../jobs/owner-kinds";
import { decompositionJobEnded } from "../projects/decompose";
import { onDispatchJobEnd } from "../tasks/dispatch/llm-select";
import { onTeamStageJobEnd } from "../team/round-handler";
import { onAttachmentsJobEnd } from "../team/attachments";

/**
 * One handler per owner kind, kept beside TICKS and CONFIG_SECTIONS: the composition root is the
 * only place that knows every feature. A Map, so an owner kind read from storage can never select a
 * prototype property.
 */
export const OWNER_HANDLERS: ReadonlyMap<OwnerKind, OwnerHandler> = new Map<OwnerKind, OwnerHandler>([
  // Diagnostic jobs: the admin reads the outcome from GET /v1/admin/jobs/:id; nothing waits.
  ["admin", async () => {}],
  // llm_select picks: the task records whether the pick was used; the handler records how the job ended.
  ["dispatch", onDispatchJobEnd],
  // Team-as-Agent stage jobs: the round advances as soon as a stage ends. A round may be a team 2×2
  // arm of a capability measurement, which moves on to its verifier once the round's task settled
  // (nothing to do, one read, when no measurement runs).
  [
    "team_round",
    async (env, end) => {
      await onTeamStageJobEnd(env, end);
      await evalTick(env, (await loadClock(env)).now());
    },
  ],
  ["council_proposal", councilProposalJobEnded],
  ["council_session", councilSessionJobEnded],
  // An approved project's decomposition into swarm tasks.
  ["project", decompositionJobEnded],
  // An employee's reply in a conversation: its turn lands, or a failed turn says why.
  ["conversation", onReplyJobEnd],
  // A reflection the prediction engine triggered: its answer becomes a memory entry.
  ["evolution_request", onReflectionJobEnd],
  // A capability-matrix measurement's case runs: each is scored, then more go out.
  ["eval_run", onEvalJobEnd],
  // An AEE round's generator, judge and case runs: the round moves on (seed 003 §12.5).
  ["aee_round", onAeeJobEnd],
  // A committed entry's settle window: its own cases, then its confirm or rollback (§12.5.4).
  ["playbook_settle", onSettleJobEnd],
  // A legacy GVU round's generator and judge (seed 003 §4.2): the round moves on.
  ["gvu_round", onGvuJobEnd],
  // A SOUL over (or at) its cap rewritten shorter (seed 003 v3 cap deadlock release): applied or refused.
  ["soul_consolidation", onConsolidationJobEnd],
  // An accepted team goal's packet attachments archive: what went in and what was refused is recorded.
  ["team_attachments", onAttachmentsJobEnd],
]);

/** Calls the owner's handler; an owner kind nobody handles is an error (retried, then recorded). */
export async function notifyOwner(env: Env, end: JobEnd): Promise<void> {
  const handler = OWNER_HANDLERS.get(end.owner.kind);
  if (!handler) throw new Error(`no handler for job owner kind '${end.owner.kind}'`);
  // Every employee run reports on the SOUL it rendered (the soul guard): drift is recorded whoever owns the run.
  await recordRunSoulGuard(env, end);
  await handler(env, end);
}
