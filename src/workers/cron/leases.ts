import { getDb } from "../../db/client";
import type { Env } from "../../env";
import { readSection } from "../../lib/config";
import { runnerConfig } from "../../jobs/config";
import { reconcileQueuedJobs } from "../../jobs/reconcile";
import { inboxConfig } from "../../jobs/inbox-config";
import { sweepEverywhere } from "../../jobs/inbox-routing";
import { notifyOwner } from "../owner-handlers";

/**
 * The `leases` tick: in every inbox (each runtime pool and shard, and the `fleet` from before pools), lapse expired leases and unacknowledged claims, give up jobs
 * queued past `max_queue_ms`, re-deliver undelivered outcomes and prune long-finished jobs; then
 * reconcile D1 with the inbox (jobs queued in D1 that the inbox never received).
 */
export async function leasesTick(env: Env, now: Date) {
  const db = getDb(env.DB);
  const [config, layout] = await Promise.all([readSection(db, runnerConfig), readSection(db, inboxConfig)]);
  const swept = await sweepEverywhere(env, layout, { now: now.getTime(), retainFinishedMs: config.retain_finished_hours * 3_600_000 });
  const reconciled = await reconcileQueuedJobs(env, db, now, config, layout, notifyOwner);
  return { ...swept, reconciled };
}
