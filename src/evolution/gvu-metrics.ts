import { and, desc, eq, gte, isNotNull, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import { conversations, conversationTurns, predictionLog, type SoulVersionRow } from "../db/schema";
import { mustNotHits, type Contract } from "./contract";
import type { SoulVersionSummary, VersionMetrics } from "./gvu-types";

/**
 * The legacy path's VersionMetrics (seed 003 §4.6) over a window of an employee's conversations:
 *   conversations_count   predictions made in the window (one per closed conversation);
 *   avg_prediction_error  their mean composite error (null without any);
 *   positive_feedback_ratio  positive over all feedback given on turns in the window (null without any);
 *   contract_violations   the employee's replies in the window that contain a `must_not` phrase;
 *   user_correction_rate  null: the prediction log keeps no per-conversation correction count, and
 *                         an unmeasured rate is absent, not 0 (no observation rule reads it).
 */
const MAX_ROWS = 2_000;

export async function versionMetrics(db: Db, employeeId: string, contract: Contract, from: Date, to: Date): Promise<VersionMetrics> {
  const lo = from.toISOString();
  const hi = to.toISOString();
  const [predictions, feedback, replies] = await Promise.all([
    db
      .select({ error: predictionLog.compositeError })
      .from(predictionLog)
      .where(and(eq(predictionLog.agentId, employeeId), gte(predictionLog.timestamp, lo), lt(predictionLog.timestamp, hi)))
      .orderBy(desc(predictionLog.id))
      .limit(MAX_ROWS)
      .all(),
    db
      .select({ feedback: conversationTurns.feedback })
      .from(conversationTurns)
      .innerJoin(conversations, eq(conversations.id, conversationTurns.conversationId))
      .where(
        and(
          eq(conversations.employeeId, employeeId),
          isNotNull(conversationTurns.feedback),
          gte(conversationTurns.at, lo),
          lt(conversationTurns.at, hi),
        ),
      )
      .limit(MAX_ROWS)
      .all(),
    contract.must_not.length === 0
      ? Promise.resolve([])
      : db
          .select({ content: conversationTurns.content })
          .from(conversationTurns)
          .innerJoin(conversations, eq(conversations.id, conversationTurns.conversationId))
          .where(
            and(
              eq(conversations.employeeId, employeeId),
              eq(conversationTurns.role, "assistant"),
              eq(conversationTurns.status, "ok"),
              gte(conversationTurns.at, lo),
              lt(conversationTurns.at, hi),
            ),
          )
          .limit(MAX_ROWS)
          .all(),
  ]);
  const positive = feedback.filter((f) => f.feedback?.polarity === "positive").length;
  const r4 = (x: number) => Math.round(x * 1e4) / 1e4;
  return {
    positive_feedback_ratio: feedback.length === 0 ? null : r4(positive / feedback.length),
    avg_prediction_error: predictions.length === 0 ? null : r4(predictions.reduce((s, p) => s + p.error, 0) / predictions.length),
    user_correction_rate: null,
    contract_violations: replies.filter((r) => mustNotHits(r.content, contract).length > 0).length,
    conversations_count: predictions.length,
  };
}

/** Stored metrics read back (a malformed value is no metrics). */
export function metricsOf(v: unknown): VersionMetrics | null {
  if (!v || typeof v !== "object") return null;
  const m = v as Record<string, unknown>;
  const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : null);
  return {
    positive_feedback_ratio: num(m.positive_feedback_ratio),
    avg_prediction_error: num(m.avg_prediction_error),
    user_correction_rate: num(m.user_correction_rate),
    contract_violations: num(m.contract_violations) ?? 0,
    conversations_count: num(m.conversations_count) ?? 0,
  };
}

/** GVU versions as the generator's OPRO history and the verifier's L2/L4 read them (superseded ones were never judged). */
export function versionSummaries(rows: readonly SoulVersionRow[]): SoulVersionSummary[] {
  const out: SoulVersionSummary[] = [];
  for (const r of rows) {
    if (r.source !== "gvu" || !r.status || r.status === "superseded") continue;
    out.push({
      version_id: `v${r.version}`,
      status: r.status,
      content: r.proposal ?? "",
      pre: metricsOf(r.preMetrics) ?? {
        positive_feedback_ratio: null,
        avg_prediction_error: null,
        user_correction_rate: null,
        contract_violations: 0,
        conversations_count: 0,
      },
      post: metricsOf(r.postMetrics),
      applied_at: r.createdAt,
      observation_end: r.observationEnd ?? r.createdAt,
    });
  }
  return out;
}
