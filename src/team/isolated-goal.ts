import type { Db } from "../db/client";
import type { Env } from "../env";
import type { IsolatedWorkspace } from "../jobs/isolated-workspace";
import { readSection } from "../lib/config";
import { notFound } from "../lib/errors";
import { createTask } from "../tasks/create-task";
import { findEmployee } from "../tasks/employees";
import { settleTask } from "../tasks/settle";
import { cascadeTeamConfig } from "./cascade";
import { teamConfig } from "./config";
import { continueLoop } from "./goal-loop";
import { goalEmployee } from "./goal-request";
import { openTeamGoal } from "./goals";
import type { RoleSettings, TeamSettings } from "./settings";
import { validateTeamSpec } from "./validate";

/**
 * One production team round in an isolated copy of the employee's workspace (issue 22, the team
 * 2×2): a goal task for the employee whose team is the employee's own `[team]` with the planner's and
 * the executor's (runtime, model) forced, the gate at `always_team` (an arm that ran solo would not
 * be the arm), one round of budget, and the workspace frozen with the goal, so every stage of the
 * round works in `<home>/eval-workspaces/<key>/` on the runner. The round is the goal loop's, with
 * its planner, executors, verifier and acceptance path unchanged; only who plans and who executes is
 * chosen from outside.
 */
export interface IsolatedGoalInput {
  employeeId: string;
  title: string;
  acceptance_criteria: string[];
  planner: { runtime: string; model: string };
  executor: { runtime: string; model: string };
  workspace: IsolatedWorkspace;
  tags: string[];
}

export type IsolatedGoalResult =
  | { opened: true; task_id: string }
  /** Nothing ran: the forced team does not validate, or the task went to someone else. */
  | { opened: false; reason: string; detail: string; task_id?: string };

/** The employee's own `[team]` with the two roles forced: explicit config for the arm, as an operator would write it. */
export function armTeamSettings(own: TeamSettings | undefined, input: Pick<IsolatedGoalInput, "planner" | "executor">): TeamSettings {
  const role = (mine: RoleSettings | undefined, forced: { runtime: string; model: string }): RoleSettings => ({
    ...(mine?.runtime === forced.runtime && mine.effort ? { effort: mine.effort } : {}),
    runtime: forced.runtime,
    model: forced.model,
  });
  return {
    ...own,
    enabled: true,
    gate: "always_team",
    roles: { ...own?.roles, planner: role(own?.roles?.planner, input.planner), executor: role(own?.roles?.executor, input.executor) },
  };
}

export async function openIsolatedGoal(env: Env, db: Db, input: IsolatedGoalInput, actor: string, now: Date): Promise<IsolatedGoalResult> {
  const row = await findEmployee(db, input.employeeId);
  if (!row) throw notFound(`employee ${input.employeeId}`);
  const base = goalEmployee(row);
  const employee = { ...base, team: armTeamSettings(base.team, input) };
  // Checked before anything is written: a team that cannot form must not leave a task that runs solo
  // in the employee's real workspace.
  const check = validateTeamSpec(cascadeTeamConfig(await readSection(db, teamConfig), employee.team, employee.model));
  if (!check.ok) return { opened: false, reason: check.reason, detail: `${check.role}: ${check.detail}` };
  if (employee.sandbox_enabled)
    return { opened: false, reason: "sandbox_enabled", detail: "an employee with sandbox_enabled never forms a team" };

  const created = await createTask(
    env,
    db,
    {
      title: input.title,
      tags: input.tags,
      priority: "medium",
      mode: "goal",
      assignee: input.employeeId,
      acceptance_criteria: input.acceptance_criteria,
      manual: false,
    },
    actor,
    now,
    1,
  );
  const goal = { title: input.title, acceptance_criteria: input.acceptance_criteria, workspace: input.workspace };
  let opened: Awaited<ReturnType<typeof openTeamGoal>> | null = null;
  try {
    if (created.assigned_to === input.employeeId)
      opened = await openTeamGoal(db, { taskId: created.task_id, employee, goal, rounds_left: 1 }, now);
  } catch (err) {
    // A goal task without its frozen team would be worked solo by the loop, in the real workspace.
    await settleTask(db, created.task_id, { status: "failed" }, actor, now).catch(() => undefined);
    throw err;
  }
  if (opened?.team !== "frozen") {
    const reason = opened ? `team_${opened.team}` : "routed_elsewhere";
    const detail = opened ? `the arm's team did not form (${opened.team})` : `the task was routed to ${created.assigned_to}`;
    // The task exists but must not be worked: it ends at once, saying why.
    await settleTask(db, created.task_id, { status: "failed" }, actor, now, [
      {
        type: "goal_ended",
        subject: created.task_id,
        payload: { task_id: created.task_id, status: "failed", reason, detail },
        dedupeKey: `goal_end:${created.task_id}`,
      },
    ]);
    return { opened: false, reason, detail, task_id: created.task_id };
  }
  await continueLoop(env, created.task_id, now);
  return { opened: true, task_id: created.task_id };
}
