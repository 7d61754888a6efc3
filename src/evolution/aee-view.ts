import { and, asc, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { aeeJobs, aeeRejections, aeeRounds, playbookSettleItems, type AeeRoundRow } from "../db/schema";
import { notFound } from "../lib/errors";
import { planOf, roundHistory, stateOf } from "./aee-context";
import { REJECTION_GATES, type RejectionTally } from "./aee-round";
import { ENTRY_STATES } from "./playbook";
import { loadPlaybook } from "./playbook-store";
import { detectStagnation } from "./stagnation";
import { capacityReport } from "./sweep";

/**
 * What `GET /v1/employees/:id/evolution` shows of the AEE path (seed 003 §12.7 dashboard: rounds, the
 * stagnation card, rejection telemetry per gate) and `GET …/playbook/rounds/:round_id` of one round.
 */
export function roundSummary(r: AeeRoundRow) {
  const s = stateOf(r);
  return {
    round_id: r.id,
    round_seq: r.roundSeq,
    status: r.status,
    step: r.step,
    attempt: r.attempt,
    intent: s.intent,
    ...(r.requestId ? { request_id: r.requestId } : {}),
    attempts: s.attempts.map((a) => ({ attempt: a.attempt, stage: a.stage, check: a.check, reason: a.reason })),
    ...(s.accepted ? { verdict: { verdict: s.accepted.verdict.verdict, reason: s.accepted.verdict.reason } } : {}),
    ...(r.approvalId ? { approval_id: r.approvalId } : {}),
    ...(r.endReason ? { end_reason: r.endReason } : {}),
    created_at: r.createdAt,
    ...(r.endedAt ? { ended_at: r.endedAt } : {}),
  };
}

export async function rejectionTelemetry(db: Db, agentId: string): Promise<{ total: number; by_gate: RejectionTally }> {
  const rows = await db
    .select({ gate: aeeRejections.gate, reason: aeeRejections.reason, n: sql<number>`COUNT(*)` })
    .from(aeeRejections)
    .where(eq(aeeRejections.agentId, agentId))
    .groupBy(aeeRejections.gate, aeeRejections.reason)
    .all();
  const by_gate = Object.fromEntries(
    REJECTION_GATES.map((g) => [g, { count: 0, reasons: {} as Record<string, number> }]),
  ) as RejectionTally;
  let total = 0;
  for (const r of rows) {
    const t = by_gate[r.gate as keyof RejectionTally];
    if (!t) continue;
    t.count += Number(r.n);
    t.reasons[r.reason] = Number(r.n);
    total += Number(r.n);
  }
  return { total, by_gate };
}

export async function aeeSummary(db: Db, agentId: string) {
  const [history, stored, telemetry, settle] = await Promise.all([
    roundHistory(db, agentId, 20),
    loadPlaybook(db, agentId),
    rejectionTelemetry(db, agentId),
    db
      .select({ status: playbookSettleItems.status, n: sql<number>`COUNT(*)` })
      .from(playbookSettleItems)
      .where(eq(playbookSettleItems.agentId, agentId))
      .groupBy(playbookSettleItems.status)
      .all(),
  ]);
  const states = Object.fromEntries(ENTRY_STATES.map((s) => [s, stored.playbook.entries.filter((e) => e.state === s).length]));
  return {
    playbook: { revision: stored.revision, entries: states, capacity: capacityReport(stored.playbook.entries) },
    rounds: history.rows.map(roundSummary),
    stagnation: detectStagnation(history.summaries),
    telemetry: { rejections: telemetry },
    settle: Object.fromEntries(settle.map((s) => [s.status, Number(s.n)])),
  };
}

/** One round in full: its pure state, plan, champion and candidate, and every job it ran. */
export async function roundDetail(db: Db, agentId: string, roundId: string) {
  const r = await db
    .select()
    .from(aeeRounds)
    .where(and(eq(aeeRounds.id, roundId), eq(aeeRounds.agentId, agentId)))
    .get();
  if (!r) throw notFound(`round ${roundId} of employee ${agentId}`);
  const jobs = await db
    .select()
    .from(aeeJobs)
    .where(eq(aeeJobs.ownerId, roundId))
    .orderBy(asc(aeeJobs.createdAt), asc(aeeJobs.jobId))
    .all();
  return {
    ...roundSummary(r),
    context: r.context,
    plan: planOf(r),
    state: stateOf(r),
    champion: r.champion,
    candidate: r.candidate,
    ...(r.commitPlan ? { commit_plan: r.commitPlan } : {}),
    jobs: jobs.map((j) => ({
      job_id: j.jobId,
      purpose: j.purpose,
      attempt: j.attempt,
      ...(j.caseRef ? { case_ref: j.caseRef } : {}),
      status: j.status,
      ...(j.outcome ? { outcome: j.outcome } : {}),
    })),
  };
}

/** Rounds of the employee, newest first (paged by round_seq). */
export async function listRounds(db: Db, agentId: string, limit: number) {
  const rows = await db.select().from(aeeRounds).where(eq(aeeRounds.agentId, agentId)).orderBy(desc(aeeRounds.roundSeq)).limit(limit).all();
  return rows.map(roundSummary);
}
