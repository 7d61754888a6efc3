import { and, desc, eq, gt, inArray } from "drizzle-orm";
import type { Db } from "../db/client";
import { events, predictionLog } from "../db/schema";
import type { EvolutionConfig } from "./config";
import { SOUL_DRIFT_EVENT } from "./soul-guard";

/**
 * `[evolution.external_factors]` (seed 003 §7): which signals outside the conversation itself reach
 * the evolution routing at a close.
 *
 * - `user_feedback` (default on): the users' feedback on replies feeds the prediction error
 *   (close.ts passes it to `extract`, or none when off).
 * - `security_events` (default off): the employee's security events since its previous close (a skill
 *   refused by the scan, a SOUL drift) are added to the context a reflection or emergency evolution
 *   is given.
 * - `channel_metrics`, `business_context`, `peer_signals`: accepted, with no source in crewplane yet
 *   (docs/conversations-and-evolution.md "External factors").
 */
export const SECURITY_EVENT_TYPES = ["skill.scan_refused", SOUL_DRIFT_EVENT] as const;
const SECURITY_EVENTS_SHOWN = 10;

export function feedbackFactor<T>(cfg: EvolutionConfig, feedback: readonly T[]): readonly T[] {
  return cfg.external_factors.user_feedback ? feedback : [];
}

/**
 * The lines a close's evolution context gains from the employee's security events since its
 * previous close (its latest prediction); none when `security_events` is off or nothing happened.
 */
export async function securitySignals(db: Db, cfg: EvolutionConfig, employeeId: string): Promise<string[]> {
  if (!cfg.external_factors.security_events) return [];
  const last = await db
    .select({ at: predictionLog.timestamp })
    .from(predictionLog)
    .where(eq(predictionLog.agentId, employeeId))
    .orderBy(desc(predictionLog.id))
    .limit(1)
    .get();
  const rows = await db
    .select({ type: events.type, createdAt: events.createdAt, payload: events.payload })
    .from(events)
    .where(
      and(
        eq(events.subject, employeeId),
        inArray(events.type, [...SECURITY_EVENT_TYPES]),
        ...(last?.at ? [gt(events.createdAt, last.at)] : []),
      ),
    )
    .orderBy(desc(events.id))
    .limit(SECURITY_EVENTS_SHOWN)
    .all();
  if (rows.length === 0) return [];
  return [
    "## Security events since the previous conversation (external factor)",
    ...rows.map((r) => {
      const categories = (r.payload as { categories?: unknown } | null)?.categories;
      return `- ${r.createdAt} ${r.type}${Array.isArray(categories) ? ` (${categories.join(", ")})` : ""}`;
    }),
  ];
}
