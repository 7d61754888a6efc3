import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { routingOverrides, tasks, type OverrideRow } from "../db/schema";
import { appendEventWhere } from "../lib/guarded-insert";
import type { TopologyConfig } from "./config";
import { judgeObservation, type ObservationVerdict } from "./observation";

export interface ObservationResult {
  override_id: string;
  verdict: ObservationVerdict["verdict"];
  samples: number;
  reject_rate: number | null;
}

/**
 * Judges every active override (or only those for one to_agent and class, after a settle), with one
 * aggregate query joining each override to its to_agent's settled goal tasks of the class created
 * since the approval (new tasks only: the reroute's own work). Each change is one guarded batch, so
 * a settle and a tick judging at once record it once.
 */
export async function observeOverrides(
  db: Db,
  cfg: TopologyConfig,
  now: Date,
  only?: { toAgent: string; taskClass: string },
): Promise<ObservationResult[]> {
  return judgeObserved(db, cfg, now, await observationQuery(db, only));
}

/**
 * The observation's aggregate as an un-executed query (the tick reads it in its one batch). `guard`,
 * when given, must hold for any row to be read (the tick's driver lease).
 */
export function observationQuery(db: Db, only?: { toAgent: string; taskClass: string }, guard?: SQL) {
  return db
    .select({
      override: routingOverrides,
      // Named, so the tick can read this as a subquery too (src/topology/inputs.ts).
      samples: sql<number>`COUNT(${tasks.id})`.as("samples"),
      rejects:
        sql<number>`COALESCE(SUM(CASE WHEN ${tasks.status} IN ('needs_human', 'failed') OR ${tasks.retryCount} > 0 THEN 1 ELSE 0 END), 0)`.as(
          "rejects",
        ),
    })
    .from(routingOverrides)
    .leftJoin(
      tasks,
      and(
        eq(tasks.assignedTo, routingOverrides.toAgent),
        eq(tasks.taskClass, routingOverrides.taskClass),
        eq(tasks.mode, "goal"),
        sql`${tasks.status} IN ('done', 'needs_human', 'failed')`,
        sql`${tasks.createdAt} >= ${routingOverrides.approvedAt}`,
      ),
    )
    .where(
      and(
        eq(routingOverrides.status, "active"),
        only ? eq(routingOverrides.toAgent, only.toAgent) : undefined,
        only ? eq(routingOverrides.taskClass, only.taskClass) : undefined,
        guard,
      ),
    )
    .groupBy(routingOverrides.id);
}

export type ObservedRow = Awaited<ReturnType<typeof observationQuery>>[number];

/** The verdict on one row `observationQuery` read (pure). */
export function observedVerdict(cfg: TopologyConfig, now: Date, row: ObservedRow): ObservationVerdict {
  const seen = { samples: Number(row.samples), rejects: Number(row.rejects) };
  const o = row.override;
  return judgeObservation(
    { baselineRejectRate: o.baselineRejectRate, observeUntil: o.observeUntil, extensions: o.extensions },
    seen,
    cfg,
    now,
  );
}

/** Judges the rows `observationQuery` read; writes only for a verdict other than `keep`. */
export async function judgeObserved(db: Db, cfg: TopologyConfig, now: Date, rows: readonly ObservedRow[]): Promise<ObservationResult[]> {
  const results: ObservationResult[] = [];
  for (const row of rows) {
    const seen = { samples: Number(row.samples), rejects: Number(row.rejects) };
    const verdict = observedVerdict(cfg, now, row);
    if (verdict.verdict !== "keep") await applyVerdict(db, row.override, verdict, seen, now);
    results.push({
      override_id: row.override.id,
      verdict: verdict.verdict,
      samples: seen.samples,
      reject_rate: seen.samples > 0 ? seen.rejects / seen.samples : null,
    });
  }
  return results;
}

async function applyVerdict(
  db: Db,
  o: OverrideRow,
  v: Exclude<ObservationVerdict, { verdict: "keep" }>,
  seen: { samples: number; rejects: number },
  now: Date,
) {
  const at = now.toISOString();
  // Guarded on the state judged: still active and not extended since, so a concurrent judge is a no-op.
  const still = and(eq(routingOverrides.id, o.id), eq(routingOverrides.status, "active"), eq(routingOverrides.extensions, o.extensions));
  const guard: SQL = sql`EXISTS (SELECT 1 FROM ${routingOverrides} WHERE ${still})`;
  const payload = {
    override_id: o.id,
    task_class: o.taskClass,
    from_agent: o.fromAgent,
    to_agent: o.toAgent,
    baseline_reject_rate: o.baselineRejectRate,
    samples: seen.samples,
    reject_rate: seen.samples > 0 ? seen.rejects / seen.samples : null,
  };
  const type = `topology.${v.verdict}`;
  const update =
    v.verdict === "extended"
      ? db
          .update(routingOverrides)
          .set({ extensions: o.extensions + 1, observeUntil: v.observeUntil })
          .where(still)
      : db
          .update(routingOverrides)
          .set({ status: v.verdict, resolvedAt: at, resolution: v.verdict === "rolled_back" ? v.reason : "confirmed" })
          .where(still);
  await db.batch([
    appendEventWhere(
      db,
      {
        type,
        subject: o.id,
        payload: {
          ...payload,
          ...(v.verdict === "rolled_back" ? { reason: v.reason } : {}),
          ...(v.verdict === "extended" ? { observe_until: v.observeUntil, previous_observe_until: o.observeUntil } : {}),
        },
        dedupeKey: `topology:${o.id}:${v.verdict}:${o.extensions}`,
      },
      now,
      guard,
    ),
    update,
  ]);
}
