// How the rest of the Worker reaches the task-budget Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";

export function getTaskBudget(env: Pick<Env, "TASK_BUDGET">, taskId: string) {
  return env.TASK_BUDGET.getByName(taskId);
}
