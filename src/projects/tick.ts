import { getDb } from "../db/client";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { reputationConfig } from "../nodes/reputation-config";
import { projectsConfig } from "./config";
import { dueDecompositions, reconcileDecompositions, startDecomposition } from "./decompose";
import { advanceDispatch, dueDispatches } from "./dispatch";
import { dueRepositories, ensureProjectRepository } from "./repository";
import { expireTasks, lapseClaims } from "./swarm-tasks";

/**
 * The `projects` tick (every minute; by hand `POST /v1/admin/ticks/projects`): decompositions whose
 * job ended without its owner call, approved projects whose decomposition is due (never started, or
 * failed and past its backoff), repositories still to create, swarm tasks past their expiry, claims
 * that lapsed unfinished (open again, `claim_abandoned` charged), and council tasks whose offer is
 * due (the next eligible node, or open to all).
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
  const claimsLapsed = await lapseClaims(db, now, await readSection(db, reputationConfig));
  const config = await readSection(db, projectsConfig);
  const offers: Record<string, string> = {};
  for (const id of await dueDispatches(db, now)) {
    const out = await advanceDispatch(env, db, id, now, config);
    if (out) offers[id] = out.kind === "offer" ? `offered:${out.node_id}` : `open:${out.reason}`;
  }
  return {
    decompositions_reconciled: reconciled,
    decompositions_started: started,
    repositories,
    tasks_expired: expired,
    claims_lapsed: claimsLapsed,
    offers,
  };
}
