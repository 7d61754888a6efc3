import { councilProposalJobEnded, councilSessionJobEnded } from "../council/jobs";
import { onEvalJobEnd } from "../eval/run";
import { onReflectionJobEnd } from "../evolution/reflection-handler";
import { onReplyJobEnd } from "../conversations/replies";
import type { Env } from "../env";
import type { JobEnd, OwnerHandler } from "../jobs/job-end";
import type { OwnerKind } from "../jobs/owner-kinds";
import { decompositionJobEnded } from "../projects/decompose";
import { onDispatchJobEnd } from "../tasks/dispatch/llm-select";
import { onTeamStageJobEnd } from "../team/round-handler";

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
  // Team-as-Agent stage jobs: the round advances as soon as a stage ends.
  ["team_round", (env, end) => onTeamStageJobEnd(env, end)],
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
]);

/** Calls the owner's handler; an owner kind nobody handles is an error (retried, then recorded). */
export async function notifyOwner(env: Env, end: JobEnd): Promise<void> {
  const handler = OWNER_HANDLERS.get(end.owner.kind);
  if (!handler) throw new Error(`no handler for job owner kind '${end.owner.kind}'`);
  await handler(env, end);
}
