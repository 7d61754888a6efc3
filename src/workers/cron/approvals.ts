import { sweepExpiredApprovals } from "../../approvals/broker";
import { getDb } from "../../db/client";
import type { Env } from "../../env";

/** Records every approval whose TTL has passed as `expired` (a denial for its caller), with its event. */
export async function approvalsTick(env: Env, now: Date) {
  const expired = await sweepExpiredApprovals(getDb(env.DB), now);
  return { expired: expired.length };
}
