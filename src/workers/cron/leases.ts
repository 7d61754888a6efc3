import { getRunnerInbox } from "../../durable-objects/runner-inbox";
import type { Env } from "../../env";

/** Lapses expired runner leases (re-queue or dead) and re-delivers any undelivered job outcomes. */
export async function leasesTick(env: Env, now: Date) {
  const { requeued, dead, pending_notices } = await getRunnerInbox(env).sweep({ now: now.getTime() });
  return { requeued, dead, pending_notices };
}
