import { getRunnerInbox, type InboxJobView } from "../../src/durable-objects/runner-inbox-rpc";
import type { Env } from "../../src/env";
import { getDb } from "../../src/db/client";
import { readSection } from "../../src/lib/config";
import { inboxConfig } from "../../src/jobs/inbox-config";
import { everyInbox } from "../../src/jobs/inbox-pools";

/**
 * A job as whichever RunnerInbox holds it sees it (the pools of issue 26: a job is in its runtime's
 * pool, or the `fleet` from before pools), or null when none does. Asks every inbox of the stored
 * layout (with its shards), so a test need not know which pool a job went to.
 */
export async function inboxJob(env: Pick<Env, "RUNNER_INBOX" | "DB">, jobId: string): Promise<InboxJobView | null> {
  const layout = await readSection(getDb(env.DB), inboxConfig);
  const views = await Promise.all(everyInbox(layout).map((name) => getRunnerInbox(env, name).get(jobId)));
  return views.find((v) => v !== null) ?? null;
}
