import { and, desc, eq, gte, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { SETTLED_TASK_STATUSES, tasks, topologyDriver, topologyEvidenceDays } from "../db/schema";
import { byAgentThenClass, evidencePlan, floorDay, MAX_SAMPLE_TASK_IDS, type Cell, type FoldedRange } from "./evidence";

/*
 * The evidence in SQL. Per tick: fold whole past days of settled goal tasks into day counters (usually
 * nothing, at most one new day), then one aggregate query that sums the counters of the window's whole
 * days and counts the rest (the partial first day, the unfolded tail) from `tasks`. Its cost follows
 * the days and cells in the window, not the number of tasks, once the first fold has run.
 */

/** A settle commits milliseconds after it reads the clock; a day is folded only once it is this far past. */
export const FOLD_LAG_MS = 60 * 60_000;
/** Counters older than this are dropped (lookback_days is at most 365). */
const KEEP_DAYS = 366;

const rejectCase = sql`CASE WHEN ${tasks.status} IN ('needs_human', 'failed') OR ${tasks.retryCount} > 0 THEN 1 ELSE 0 END`;
const needsHumanCase = sql`CASE WHEN ${tasks.status} = 'needs_human' THEN 1 ELSE 0 END`;
const oscillationCase = sql`CASE WHEN ${tasks.status} = 'needs_human' AND ${tasks.pauseClass} = 'no_progress' THEN 1 ELSE 0 END`;

/**
 * Settled goal tasks in [from, to): the terms that let SQLite use the partial index tasks_evidence_idx.
 * Queries name the index (INDEXED BY): after ANALYZE the planner would rather scan another index to
 * skip the GROUP BY sort, with a table lookup per task, which made a tick over 100k tasks ~10× slower
 * (bench/topology-tick); INDEXED BY also fails loudly if a change ever made the index unusable.
 */
function settledGoal(from: string | null, to: string | null): SQL {
  return sql`${tasks.mode} = 'goal' AND ${tasks.settledAt} IS NOT NULL AND ${tasks.status} IN ('done', 'needs_human', 'failed')${
    from === null ? sql`` : sql` AND ${tasks.settledAt} >= ${from}`
  }${to === null ? sql`` : sql` AND ${tasks.settledAt} < ${to}`}`;
}

/**
 * Folds every whole UTC day that ended at least FOLD_LAG_MS ago and is not folded yet; the first fold
 * starts at the window's first day (`since`), so its cost is the window's, not the whole history's.
 * One batch, guarded on the watermark it read (or was given: the tick reads it when it claims the
 * driver), so two folds at once count each task once.
 */
export async function foldEvidence(
  db: Db,
  now: Date,
  since: string,
  known?: { foldedFrom: string | null; foldedThrough: string | null },
): Promise<{ folded: FoldedRange | null; advanced: boolean }> {
  const state = known ??
    (await db
      .select({ foldedFrom: topologyDriver.foldedFrom, foldedThrough: topologyDriver.foldedThrough })
      .from(topologyDriver)
      .where(eq(topologyDriver.id, 1))
      .get()) ?? { foldedFrom: null, foldedThrough: null };
  const previous = state.foldedThrough;
  const current = previous !== null && state.foldedFrom !== null ? { from: state.foldedFrom, through: previous } : null;
  const target = floorDay(new Date(now.getTime() - FOLD_LAG_MS).toISOString());
  if (previous !== null && target < previous) {
    // The clock went back (only the test clock can): counters may now cover days that tasks are still
    // being settled in. Start over rather than count those tasks never.
    await db.batch([
      db.delete(topologyEvidenceDays),
      db
        .update(topologyDriver)
        .set({ foldedFrom: null, foldedThrough: null })
        .where(and(eq(topologyDriver.id, 1), sql`${topologyDriver.foldedThrough} = ${previous}`)),
    ]);
    return foldEvidence(db, now, since, { foldedFrom: null, foldedThrough: null });
  }
  const start = previous ?? floorDay(since);
  if (target <= start) return { folded: current, advanced: false };
  const unchanged = previous === null ? sql`${topologyDriver.foldedThrough} IS NULL` : sql`${topologyDriver.foldedThrough} = ${previous}`;
  const keepFrom = new Date(Date.parse(target) - KEEP_DAYS * 86_400_000).toISOString();
  const from = current === null ? start : current.from > keepFrom ? current.from : floorDay(keepFrom);
  const [, , , moved] = await db.batch([
    db.insert(topologyDriver).values({ id: 1 }).onConflictDoNothing(),
    // Columns in table order: day, agent, task_class, samples, rejects, needs_human, oscillations.
    db
      .insert(topologyEvidenceDays)
      .select(
        sql`SELECT substr(${tasks.settledAt}, 1, 10), ${tasks.assignedTo}, ${tasks.taskClass}, COUNT(*), SUM(${rejectCase}), SUM(${needsHumanCase}), SUM(${oscillationCase})
            FROM ${tasks} INDEXED BY tasks_evidence_idx
            WHERE ${settledGoal(start, target)} AND EXISTS (SELECT 1 FROM ${topologyDriver} WHERE ${topologyDriver.id} = 1 AND ${unchanged})
            GROUP BY 1, 2, 3`,
      )
      .onConflictDoUpdate({
        target: [topologyEvidenceDays.day, topologyEvidenceDays.agent, topologyEvidenceDays.taskClass],
        set: {
          samples: sql`${topologyEvidenceDays.samples} + excluded.samples`,
          rejects: sql`${topologyEvidenceDays.rejects} + excluded.rejects`,
          needsHuman: sql`${topologyEvidenceDays.needsHuman} + excluded.needs_human`,
          oscillations: sql`${topologyEvidenceDays.oscillations} + excluded.oscillations`,
        },
      }),
    db.delete(topologyEvidenceDays).where(sql`${topologyEvidenceDays.day} < ${from.slice(0, 10)}`),
    db
      .update(topologyDriver)
      .set({ foldedFrom: from, foldedThrough: target })
      .where(and(eq(topologyDriver.id, 1), unchanged))
      .returning({ id: topologyDriver.id }),
  ]);
  if (moved.length > 0) return { folded: { from, through: target }, advanced: true };
  // Another fold moved the watermark first; its rows stand and these were not written.
  const after = await db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get();
  return {
    folded: after?.foldedFrom && after.foldedThrough ? { from: after.foldedFrom, through: after.foldedThrough } : null,
    advanced: false,
  };
}

/** The tick's one aggregate query for the window starting at `since` (exported so a test can read its plan). */
export function evidenceSql(since: string, folded: FoldedRange | null): SQL {
  const plan = evidencePlan(since, folded);
  const parts: SQL[] = plan.raw.map(
    (r) => sql`SELECT ${tasks.assignedTo} AS agent, ${tasks.taskClass} AS task_class, COUNT(*) AS samples, SUM(${rejectCase}) AS rejects,
        SUM(${needsHumanCase}) AS needs_human, SUM(${oscillationCase}) AS oscillations
      FROM ${tasks} INDEXED BY tasks_evidence_idx WHERE ${settledGoal(r.from, r.to)} GROUP BY 1, 2`,
  );
  if (plan.days) {
    parts.unshift(
      sql`SELECT ${topologyEvidenceDays.agent} AS agent, ${topologyEvidenceDays.taskClass} AS task_class, ${topologyEvidenceDays.samples} AS samples,
          ${topologyEvidenceDays.rejects} AS rejects, ${topologyEvidenceDays.needsHuman} AS needs_human, ${topologyEvidenceDays.oscillations} AS oscillations
        FROM ${topologyEvidenceDays} WHERE ${topologyEvidenceDays.day} >= ${plan.days.from} AND ${topologyEvidenceDays.day} < ${plan.days.to}`,
    );
  }
  return sql`SELECT agent, task_class, SUM(samples) AS samples, SUM(rejects) AS rejects, SUM(needs_human) AS needs_human, SUM(oscillations) AS oscillations
    FROM (${sql.join(parts, sql` UNION ALL `)}) GROUP BY agent, task_class`;
}

/** The evidence cells of the window; `folded` null counts everything from `tasks`. */
export async function loadEvidenceCells(db: Db, since: string, folded: FoldedRange | null = null): Promise<Cell[]> {
  const rows = await db.all<Cell>(evidenceSql(since, folded));
  return rows
    .map((r) => ({
      agent: r.agent,
      task_class: r.task_class,
      samples: Number(r.samples),
      rejects: Number(r.rejects),
      needs_human: Number(r.needs_human),
      oscillations: Number(r.oscillations),
    }))
    .sort(byAgentThenClass);
}

/** The ten sample ids for the one cell a proposal is made about (same order as `sampleTaskIds`). */
export async function loadSampleTaskIds(db: Db, since: string, agent: string, taskClass: string): Promise<string[]> {
  const rows = await db
    .select({ id: tasks.id })
    .from(tasks)
    .where(
      and(
        eq(tasks.mode, "goal"),
        inArray(tasks.status, [...SETTLED_TASK_STATUSES]),
        gte(tasks.settledAt, since),
        eq(tasks.assignedTo, agent),
        eq(tasks.taskClass, taskClass),
      ),
    )
    .orderBy(desc(rejectCase), desc(tasks.settledAt), tasks.id)
    .limit(MAX_SAMPLE_TASK_IDS);
  return rows.map((r) => r.id);
}
