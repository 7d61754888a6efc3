import { desc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { evolutionRequests, predictionLog } from "../db/schema";
import type { Env } from "../env";
import { getAgentLock } from "../durable-objects/agent-lock-rpc";
import { readSection } from "../lib/config";
import { notFound } from "../lib/errors";
import { findEmployee } from "../tasks/employees";
import { effectiveEvolution, evolutionConfig } from "./config";
import { loadEvolutionState } from "./state";
import { aeeSummary } from "./aee-view";
import { gvuSummary } from "./gvu-view";

/** `GET /v1/employees/:id/evolution`: config, thresholds, counters, cooldown, last trigger, recent routes and requests. */
export async function evolutionView(env: Env, db: Db, employeeId: string, now: Date) {
  const employee = await findEmployee(db, employeeId);
  if (!employee) throw notFound(`employee ${employeeId}`);
  const config = effectiveEvolution(await readSection(db, evolutionConfig), employee.config?.evolution);
  const state = await loadEvolutionState(db, employeeId);
  const [routes, requests, lock, aee, gvu] = await Promise.all([
    db.select().from(predictionLog).where(eq(predictionLog.agentId, employeeId)).orderBy(desc(predictionLog.id)).limit(20).all(),
    db
      .select()
      .from(evolutionRequests)
      .where(eq(evolutionRequests.agentId, employeeId))
      .orderBy(desc(evolutionRequests.createdAt))
      .limit(20)
      .all(),
    getAgentLock(env, employeeId).status({ now: now.getTime() }),
    // The AEE path (seed 003 §12.7): its rounds, the stagnation card, rejection telemetry per gate.
    aeeSummary(db, employeeId),
    // The SOUL and the legacy GVU path (seed 003 §4): its path, current version and GVU rounds.
    gvuSummary(db, employeeId, config),
  ]);
  const cooling = state.cooldown_until !== null && Date.parse(state.cooldown_until) > now.getTime();
  return {
    employee_id: employeeId,
    config,
    ...(employee.config?.evolution !== undefined ? { own: employee.config.evolution } : {}),
    status: config.gvu_enabled ? "enabled" : "disabled",
    thresholds: state.thresholds,
    counters: { predictions: state.predictions, consecutive_significant: state.consecutive_significant },
    cooldown: { until: state.cooldown_until, active: cooling },
    last_trigger: state.last_trigger_at ? { at: state.last_trigger_at, kind: state.last_trigger_kind } : null,
    lock: lock ? { held_by: lock.holder, until: new Date(lock.until).toISOString() } : null,
    recent_routes: routes.map((r) => ({
      conversation_id: r.conversationId,
      user_id: r.userId,
      composite_error: r.compositeError,
      category: r.category,
      action: r.action,
      at: r.timestamp,
    })),
    recent_requests: requests.map((r) => ({
      request_id: r.id,
      kind: r.kind,
      status: r.status,
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.jobId ? { job_id: r.jobId } : {}),
      created_at: r.createdAt,
      ...(r.endedAt ? { ended_at: r.endedAt } : {}),
    })),
    ...aee,
    ...gvu,
  };
}
