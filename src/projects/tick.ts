import { getDb } from "../db/client";
import type { Env } from "../env";
import { dueDecompositions, reconcileDecompositions, startDecomposition } from "./decompose";
import { dueRepositories, ensureProjectRepository } from "./repository";
import { expireTasks } from "./swarm-tasks";

/**
 * The `projects` tick (every minute; by hand `POST /v1/admin/ticks/projects`): decompositions whose
 * job ended without its owner call, approved projects whose decomposition is due (never started, or
 * failed and past its backoff), repositories still to create, and swarm tasks past their expiry.
 */
export async function projectsTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const reconciled = await reconcileDecompositions(env, db, now);
  let started = 0;
  for (const id of await dueDecompositions(db, now)) if ((await startDecomposition(env, db, id, now)).started) started++;
  const repositories: Record<string, string> = {};
  for (const id of await dueRepositories(db, now)) {
    const out = await ensureProjectRepository(env, db, id, now);
    if (out) repositories[id] = out.state;
  }
  const expired = await expireTasks(db, now);
  return { decompositions_reconciled: reconciled, decompositions_started: started, repositories, tasks_expired: expired };
}
