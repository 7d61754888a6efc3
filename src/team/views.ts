import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks } from "../db/schema";
import { getTaskBudget } from "../durable-objects/task-budget-rpc";
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
    // Only a task whose team worked a round has a spawn budget (solo rounds spawn no member).
    budget: rounds.some((r) => r.mode !== "solo") ? await getTaskBudget(env, taskId).status() : null,
  };
}

/** The roles tab: every ledger row of the task, and whether its hash chain still verifies. */
export async function roleTurnsView(db: Db, taskId: string) {
  const rows = await listRoleTurns(db, taskId);
  return { task_id: taskId, role_turns: rows.map(roleTurnView), chain: await verifyChain(rows) };
}

/** A task the tasks table or the team side knows (a round started from code has no task row). */
export async function taskKnownToTeam(db: Db, taskId: string): Promise<boolean> {
  if (await db.select({ id: tasks.id }).from(tasks).where(eq(tasks.id, taskId)).get()) return true;
  if (await findTeamSpec(db, taskId)) return true;
  return (await listRoleTurns(db, taskId)).length > 0;
}

/**
 * The team fields of `GET /v1/tasks/:id` (API.md: `team_spec`, `gate`, `rounds`, `role_turns` when
 * present). A task the team never touched gets none of them: with the team off, the task reads
 * exactly as it would without the feature.
 */
export async function teamFieldsOfTask(env: Env, db: Db, taskId: string): Promise<Record<string, unknown>> {
  const view = await teamTaskView(env, db, taskId);
  if (!view) return {};
  const turns = await listRoleTurns(db, taskId);
  const { task_id: _task, employee_id: _employee, goal: _goal, budget, rounds, ...team } = view;
  return {
    ...team,
    ...(rounds.length ? { rounds } : {}),
    ...(budget ? { team_budget: budget } : {}),
    ...(turns.length ? { role_turns: turns.map(roleTurnView) } : {}),
  };
}
