import { desc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { gvuRounds, type GvuRoundRow } from "../db/schema";
import type { EvolutionConfig } from "./config";
import { soulReadOnly } from "./soul-run";
import { findSoulVersion, loadSoul } from "./soul-store";

/**
 * The SOUL side of `GET /v1/employees/:id/evolution` (issue 23 item 6): which path the employee is
 * on, its current SOUL version (the text itself is at `/soul`), and its legacy GVU rounds with each
 * generation's verdict. The AEE rounds are `rounds` (aee-view.ts); these are `gvu_rounds`.
 */
export async function gvuSummary(db: Db, employeeId: string, cfg: EvolutionConfig) {
  const [soul, rounds] = await Promise.all([
    loadSoul(db, employeeId),
    db.select().from(gvuRounds).where(eq(gvuRounds.employeeId, employeeId)).orderBy(desc(gvuRounds.createdAt)).limit(20).all(),
  ]);
  const head = soul ? await findSoulVersion(db, employeeId, soul.version) : undefined;
  return {
    path: cfg.legacy_soul_evolution ? ("legacy" as const) : ("aee" as const),
    soul: soul
      ? {
          version: soul.version,
          sha256: soul.sha256,
          source: head?.source ?? null,
          ...(head?.status ? { status: head.status, observation_end: head.observationEnd } : {}),
          read_only_to_employee: soulReadOnly(cfg),
        }
      : null,
    gvu_rounds: rounds.map(gvuRoundSummary),
  };
}

export function gvuRoundSummary(r: GvuRoundRow) {
  return {
    round_id: r.id,
    status: r.status,
    request_id: r.requestId,
    base_version: r.baseVersion,
    attempts: r.attempts,
    max_generations: r.maxGenerations,
    ...(r.phase ? { phase: r.phase, pending_job_id: r.pendingJobId } : {}),
    generations: (r.generations ?? []).map((g) => ({
      attempt: g.attempt,
      verdict: g.verdict,
      ...(g.layer ? { layer: g.layer } : {}),
      ...(g.reason ? { reason: g.reason } : {}),
      ...(g.judge ? { judge: g.judge } : {}),
      ...(typeof g.confidence === "number" ? { confidence: g.confidence } : {}),
    })),
    ...(r.outcome ? { outcome: r.outcome } : {}),
    ...(r.appliedVersion !== null ? { applied_version: r.appliedVersion } : {}),
    ...(r.approvalId ? { approval_id: r.approvalId } : {}),
    created_at: r.createdAt,
    ...(r.endedAt ? { ended_at: r.endedAt } : {}),
  };
}
