import { desc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { topologyProposals } from "../db/schema";
import type { Env } from "../env";
import { brokerAvailability } from "../approvals/channels";
import { readSection } from "../lib/config";
import { topologyConfig } from "./config";
import { driverState } from "./driver";
import { listOverrides, overrideView } from "./overrides";

/** `GET /v1/topology` (seed 000 "topology.list"): the overrides and the pending reroute proposals. */
export async function topologyView(env: Env, db: Db, now: Date) {
  const [cfg, overrides, pending, broker, driver] = await Promise.all([
    readSection(db, topologyConfig),
    listOverrides(db),
    db.select().from(topologyProposals).where(eq(topologyProposals.status, "pending")).orderBy(desc(topologyProposals.createdAt)),
    brokerAvailability(env, db, now),
    driverState(db),
  ]);
  return {
    enabled: cfg.enabled,
    approval_broker_available: broker.available,
    last_tick_at: driver.last_tick_at,
    overrides: overrides.map(overrideView),
    pending: pending.map((p) => ({
      proposal_id: p.id,
      approval_id: p.approvalId,
      task_class: p.taskClass,
      from_agent: p.fromAgent,
      to_agent: p.toAgent,
      created_at: p.createdAt,
      evidence: p.evidence,
    })),
  };
}
