import type { Db } from "../db/client";
import { readSection } from "../lib/config";
import type { DispatchPolicy } from "../tasks/dispatch/config";
import { policyAsksForTeam } from "../tasks/dispatch/route";
import { findEmployee } from "../tasks/employees";
import { goalEmployee } from "./goal-request";
import { openTeamGoal } from "./goals";
import { goalsConfig } from "./goals-config";

/**
 * `[dispatch] policy = "role_team"` for a task created through `POST /v1/tasks` (seed 002: role_team
 * joined the dispatch policies). Under the other policies such a task is worked by the employee alone;
 * under role_team a goal task the loop works is offered to the employee's team: cascade, validation,
 * the gate (answering team, `dispatch_role_team`) and the spec freeze, exactly as a goal opened
 * through `POST /v1/employees/:id/goals`. Null when the policy does not ask for the team. Called
 * before the loop's first step, so the first round is already the team's.
 */
export async function offerTaskToTeam(
  db: Db,
  created: { task_id: string; assigned_to: string; route: { policy: DispatchPolicy } },
  task: {
    title: string;
    acceptance_criteria: string[];
    mode: "goal" | "plain";
    manual: boolean;
    rounds_left?: number;
    conversation_id?: string;
  },
  now: Date,
) {
  if (!policyAsksForTeam(created.route.policy, task)) return null;
  const worker = await findEmployee(db, created.assigned_to);
  if (!worker) return null;
  const loop = await readSection(db, goalsConfig);
  const opened = await openTeamGoal(
    db,
    {
      taskId: created.task_id,
      employee: goalEmployee(worker),
      goal: { title: task.title, acceptance_criteria: task.acceptance_criteria },
      ...(task.conversation_id ? { conversation_id: task.conversation_id } : {}),
      rounds_left: task.rounds_left ?? loop.iteration_cap,
      loop: { max_concurrent: loop.max_concurrent, iteration_cap: loop.iteration_cap },
      dispatch_role_team: true,
    },
    now,
  );
  // What the answer says of the team: the gate as it answered (a refusal or `[team]` off: solo, with why).
  if (opened.team === "disabled") return { gate: { decision: "solo" as const, reason: "team_disabled" as const } };
  return { gate: { decision: opened.gate.decision, reason: opened.gate.reason } };
}
