import type { Db } from "../db/client";
import type { Principal } from "../lib/auth";
import { AppError } from "../lib/errors";
import { TERMINAL_PHASES } from "./composer";
import { parseMemberScope } from "./member-token";
import { findRound, stateOf } from "./round-store";

/**
 * `GET /v1/team/member`: a member (its runner, on its behalf) asks whether its round and stage are
 * still going. The runner stops a member whose round ended under it and sweeps scaffolds of rounds
 * that are over. A round that ends revokes its tokens, so most "over" answers are a 401 before this
 * runs; this answers the rest (the stage already ended, e.g. a re-leased attempt).
 */
export async function memberStatus(db: Db, principal: Principal) {
  const scope = principal.kind === "member" ? parseMemberScope(principal.scope) : null;
  if (!scope) throw new AppError("forbidden", "This member token is not pinned to a task, round and role");
  const row = await findRound(db, scope.round_id);
  if (!row || row.taskId !== scope.task_id) throw new AppError("forbidden", "The token's round does not exist");
  const state = stateOf(row);
  const stage = state.stages.find((s) => s.stage_id === scope.stage_id);
  return {
    task_id: scope.task_id,
    round: scope.round,
    round_id: scope.round_id,
    role: scope.role,
    stage_id: scope.stage_id,
    round_phase: state.phase,
    stage_status: stage?.status ?? null,
    live: !TERMINAL_PHASES.has(state.phase) && stage?.status === "dispatched",
  };
}
