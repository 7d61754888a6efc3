import { and, desc, eq, inArray, or } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { employees, routingOverrides, type OverrideRow } from "../db/schema";

const inForce = z.object({
  id: z.string().regex(/^ovr_[0-9a-f]{16}$/),
  toAgent: z.string().min(1),
  status: z.enum(["active", "confirmed"]),
});
export type OverrideInForce = z.infer<typeof inForce>;

/**
 * The override dispatch applies for (task_class, from_agent), if any. Fail-safe (seed 000 step 4):
 * a missing row, a row that does not parse, a to_agent that no longer exists, or a failed read all
 * read as "no override", and routing stays as it was.
 */
export async function findOverrideInForce(db: Db, taskClass: string, fromAgent: string): Promise<OverrideInForce | null> {
  try {
    const row = await db
      .select({ id: routingOverrides.id, toAgent: routingOverrides.toAgent, status: routingOverrides.status })
      .from(routingOverrides)
      .innerJoin(employees, eq(employees.id, routingOverrides.toAgent))
      .where(
        and(
          eq(routingOverrides.taskClass, taskClass),
          eq(routingOverrides.fromAgent, fromAgent),
          inArray(routingOverrides.status, ["active", "confirmed"]),
        ),
      )
      .get();
    if (!row) return null;
    const parsed = inForce.safeParse(row);
    return parsed.success ? parsed.data : null;
  } catch (err) {
    console.error("topology: override lookup failed; routing without an override", err);
    return null;
  }
}

/**
 * Every override in force (dispatch applies them, so the view never hides one; at most one per edge),
 * and the newest `limit` rolled-back ones as history; newest first, in one statement.
 */
export function listOverrides(db: Db, limit = 200): Promise<OverrideRow[]> {
  const history = db
    .select({ id: routingOverrides.id })
    .from(routingOverrides)
    .where(eq(routingOverrides.status, "rolled_back"))
    .orderBy(desc(routingOverrides.approvedAt))
    .limit(limit);
  return db
    .select()
    .from(routingOverrides)
    .where(or(inArray(routingOverrides.status, ["active", "confirmed"]), inArray(routingOverrides.id, history)))
    .orderBy(desc(routingOverrides.approvedAt));
}

export function overrideView(o: OverrideRow) {
  return {
    override_id: o.id,
    task_class: o.taskClass,
    from_agent: o.fromAgent,
    to_agent: o.toAgent,
    status: o.status,
    approved_at: o.approvedAt,
    approved_by: o.approvedBy,
    observe_until: o.observeUntil,
    baseline_reject_rate: o.baselineRejectRate,
    baseline_samples: o.baselineSamples,
    extended: o.extensions > 0,
    proposal_id: o.proposalId,
    approval_id: o.approvalId,
    ...(o.resolvedAt ? { resolved_at: o.resolvedAt, resolution: o.resolution } : {}),
  };
}
