import type { Db } from "../db/client";
import { getTaskBudget } from "../durable-objects/task-budget";
import type { Env } from "../env";
import { listRoleTurns, roleTurnView, verifyChain } from "./ledger";
import { listRounds, stateOf } from "./round-store";
import { findTeamSpec } from "./spec-store";

/**
 * What the task's detail shows of the team (`team_spec`, `gate`, `rounds`, `role_turns`): until the
 * tasks feature merges it into `GET /v1/tasks/:id`, it is served at `GET /v1/team/tasks/:id`.
 */
export async function teamTaskView(env: Env, db: Db, taskId: string) {
  const spec = await findTeamSpec(db, taskId);
  const rounds = (await listRounds(db, taskId)).map((r) => ({
    ...stateOf(r),
    version: r.version,
    started_at: r.startedAt,
    ended_at: r.endedAt,
  }));
  if (!spec && rounds.length === 0) return null;
  return {
    task_id: taskId,
    ...(spec
      ? {
          employee_id: spec.employeeId,
          goal: spec.goal,
          ...(spec.spec ? { team_spec: spec.spec, spec_frozen_at: spec.specFrozenAt } : {}),
          ...(spec.gate ? { gate: spec.gate } : {}),
          ...(spec.refusal ? { team_refused: spec.refusal } : {}),
        }
      : {}),
    rounds,
    budget: rounds.length ? await getTaskBudget(env, taskId).status() : null,
  };
}

/** The roles tab: every ledger row of the task, and whether its hash chain still verifies. */
export async function roleTurnsView(db: Db, taskId: string) {
  const rows = await listRoleTurns(db, taskId);
  return { task_id: taskId, role_turns: rows.map(roleTurnView), chain: await verifyChain(rows) };
}
