import { getDb } from "../db/client";
import { getCouncilSession } from "../durable-objects/council-session-rpc";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import type { JobEnd } from "../jobs/job-end";
import { readCouncilConfig } from "./config";
import { onPrescreenEnded } from "./proposals";
import { cryptoRandom } from "./random";

/** Owner `council_proposal`: a prescreen job ended. */
export async function councilProposalJobEnded(env: Env, end: JobEnd): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  await onPrescreenEnded(env, db, end, now, await readCouncilConfig(db, now), cryptoRandom);
}

/** Owner `council_session`: a synthesis or ethics job ended; the session's own object decides. */
export async function councilSessionJobEnded(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).nowMs();
  const out = await getCouncilSession(env, end.owner.id).jobEnded({
    session_id: end.owner.id,
    now,
    end: {
      job_id: end.job_id,
      status: end.status,
      ...(end.result ? { result: end.result } : {}),
      ...(end.error ? { error: end.error } : {}),
      ...(end.reason ? { reason: end.reason } : {}),
    },
  });
  if (!out.ok && out.code === "not_found") console.error(`council: job ${end.job_id} names session ${end.owner.id}, which does not exist`);
}
