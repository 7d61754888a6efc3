import { and, desc, eq, gte, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { SETTLED_TASK_STATUSES, tasks, topologyDriver, topologyEvidenceDays } from "../db/schema";
import { byAgentThenClass, evidencePlan, floorDay, MAX_SAMPLE_TASK_IDS, type Cell, type FoldedRange } from "./evidence";

/*
 * The evidence in SQL. Per tick: fold settled goal tasks into per-day counters up to a watermark a
 * little behind now (FOLD_LAG_MS, on a FOLD_STEP_MS grid), then one aggregate query that sums the
 * counters of the window's days and counts the rest (the window's partial first day, the tail after
 * the watermark) from `tasks`. Once the first fold has run, its cost follows the days and cells in the
 * window plus the tail (at most FOLD_LAG_MS + FOLD_STEP_MS of settles), not the number of tasks.
 */

/**
 * A settle commits within moments of reading the clock (two D1 round trips); the watermark stays this
 * far behind now so that no task can commit with a settled_at the counters have already passed.
 */
export const FOLD_LAG_MS = 10 * 60_000;
/** The watermark moves in steps of this (a tick folds at most once per step; the tail stays short). */
export const FOLD_STEP_MS = 10 * 60_000;
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
function settledGoal(from: string | SQL | null, to: string | null): SQL {
  return sql`${tasks.mode} = 'goal' AND ${tasks.settledAt} IS NOT NULL AND ${tasks.status} IN ('done', 'needs_human', 'failed')${
    from === null ? sql`` : sql` AND ${tasks.settledAt} >= ${from}`
  }${to === null ? sql`` : sql` AND ${tasks.settledAt} < ${to}`}`;
}

/**
 * A range's lower bound that is NULL unless `guard` holds, so a statement whose guard fails reads an
 * empty index range instead of the range. (A plain `AND guard` term would be tested once per index
 * entry, not once per statement: SQLite does not hoist a subquery term out of the scan.)
 */
function lowerBound(from: string, guard?: SQL): string | SQL {
  return guard ? sql`(SELECT CASE WHEN ${guard} THEN ${from} END)` : from;
}

export interface FoldState {
  foldedFrom: string | null;
  foldedThrough: string | null;
}

/** The day counters' range as the evidence query uses it (null: nothing usable folded). */
export function foldedRange(state: FoldState): FoldedRange | null {
  return state.foldedThrough !== null && state.foldedFrom !== null ? { from: state.foldedFrom, through: state.foldedThrough } : null;
}

/** Where the watermark should be now: FOLD_LAG_MS back, down to the FOLD_STEP_MS grid. */
export function foldTarget(now: Date): string {
  const lagged = now.getTime() - FOLD_LAG_MS;
  return new Date(lagged - (((lagged % FOLD_STEP_MS) + FOLD_STEP_MS) % FOLD_STEP_MS)).toISOString();
}

/**
 * What folding needs now. `none`: the watermark is where it should be. `step`: it moves forward from
 * where it is (at most once per FOLD_STEP_MS; the tick does this inside its one batch). `full`: nothing
 * usable is folded — the first fold after D5 is enabled, the clock went back (only the test clock
 * can), the counters end before the window begins, or they begin after its first day (lookback_days
 * was raised: otherwise every tick would count the days before them from `tasks`) — so the counters
 * start over at the window's first day: one pass over the window's tasks (`foldEvidence`).
 */
export function foldNeeded(now: Date, since: string, state: FoldState): "none" | "step" | "full" {
  const target = foldTarget(now);
  const previous = state.foldedThrough;
  const firstDay = floorDay(since);
  if (previous === null) return target > firstDay ? "full" : "none";
  if (target < previous || previous < firstDay || (state.foldedFrom !== null && state.foldedFrom > firstDay)) return "full";
  return target > previous ? "step" : "none";
}

/**
 * The statements that move the watermark from where `state` has it to `target` (callers check
 * `foldNeeded` first): fold the tasks settled in between into their days' counters, drop counters past
 * KEEP_DAYS, record the watermark. Each is conditional on the watermark still being where `state` has
 * it (and on `guard`, when given), and the watermark's update comes last, so two folds at once count
 * each task once. Returns the range the counters hold once they have run.
 */
export function foldStatements(db: Db, state: FoldState, since: string, target: string, guard?: SQL) {
  const previous = state.foldedThrough;
  const current = foldedRange(state);
  const start = previous ?? floorDay(since);
  const unchanged = previous === null ? sql`${topologyDriver.foldedThrough} IS NULL` : sql`${topologyDriver.foldedThrough} = ${previous}`;
  const holds = sql`EXISTS (SELECT 1 FROM ${topologyDriver} WHERE ${topologyDriver.id} = 1 AND ${unchanged})${guard ? sql` AND ${guard}` : sql``}`;
  const keepFrom = new Date(Date.parse(target) - KEEP_DAYS * 86_400_000).toISOString();
  const from = current === null ? start : current.from > keepFrom ? current.from : floorDay(keepFrom);
  const statements = [
    // Columns in table order: day, agent, task_class, samples, rejects, needs_human, oscillations.
    db
      .insert(topologyEvidenceDays)
      .select(
        sql`SELECT substr(${tasks.settledAt}, 1, 10), ${tasks.assignedTo}, ${tasks.taskClass}, COUNT(*), SUM(${rejectCase}), SUM(${needsHumanCase}), SUM(${oscillationCase})
            FROM ${tasks} INDEXED BY tasks_evidence_idx
            WHERE ${settledGoal(lowerBound(start, holds), target)}
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
    db.delete(topologyEvidenceDays).where(and(sql`${topologyEvidenceDays.day} < ${from.slice(0, 10)}`, guard)),
    db
      .update(topologyDriver)
      .set({ foldedFrom: from, foldedThrough: target })
      .where(and(eq(topologyDriver.id, 1), unchanged, guard))
      .returning({ id: topologyDriver.id }),
  ] as const;
  return { statements, folded: { from, through: target } satisfies FoldedRange };
}

/**
 * Brings the counters up to date (see `foldNeeded`) in one batch, guarded on the watermark it read (or
 * was given: the tick reads it when it claims the driver), so two folds at once count each task once.
 * A full fold starts at the window's first day, so its cost is the window's, not the whole history's.
 */
export async function foldEvidence(
  db: Db,
  now: Date,
  since: string,
  known?: FoldState,
): Promise<{ folded: FoldedRange | null; advanced: boolean }> {
  const state = known ??
    (await db
      .select({ foldedFrom: topologyDriver.foldedFrom, foldedThrough: topologyDriver.foldedThrough })
      .from(topologyDriver)
      .where(eq(topologyDriver.id, 1))
      .get()) ?? { foldedFrom: null, foldedThrough: null };
  const previous = state.foldedThrough;
  const need = foldNeeded(now, since, state);
  if (need === "full" && previous !== null) {
    // Counters that may cover moments tasks are still being settled in (the clock went back), or that
    // the window no longer reaches: start over rather than count a task never, or fold days nobody reads.
    // Guarded like the fold: of resets at once, one clears the counters (a later one would delete a fold
    // that followed the first).
    const unchanged = sql`${topologyDriver.foldedThrough} = ${previous}`;
    await db.batch([
      db.delete(topologyEvidenceDays).where(sql`EXISTS (SELECT 1 FROM ${topologyDriver} WHERE ${topologyDriver.id} = 1 AND ${unchanged})`),
      db
        .update(topologyDriver)
        .set({ foldedFrom: null, foldedThrough: null })
        .where(and(eq(topologyDriver.id, 1), unchanged)),
    ]);
    return foldEvidence(db, now, since, { foldedFrom: null, foldedThrough: null });
  }
  if (need === "none") return { folded: foldedRange(state), advanced: false };
  const { statements, folded } = foldStatements(db, state, since, foldTarget(now));
  const [, , , moved] = await db.batch([db.insert(topologyDriver).values({ id: 1 }).onConflictDoNothing(), ...statements]);
  if (moved.length > 0) return { folded, advanced: true };
  // Another fold moved the watermark first; its rows stand and these were not written.
  const after = await db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get();
  return {
    folded: after?.foldedFrom && after.foldedThrough ? { from: after.foldedFrom, through: after.foldedThrough } : null,
    advanced: false,
  };
}

/**
 * The tick's one aggregate query for the window starting at `since` (exported so a test can read its
 * plan). With a `guard` (the tick's claim: read inside the batch that claims it), every part reads
 * an empty range unless the guard holds (`lowerBound`).
 */
export function evidenceSql(since: string, folded: FoldedRange | null, guard?: SQL): SQL {
  const plan = evidencePlan(since, folded);
  const lower = (from: string) => lowerBound(from, guard);
  const parts: SQL[] = plan.raw.map(
    (r) => sql`SELECT ${tasks.assignedTo} AS agent, ${tasks.taskClass} AS task_class, COUNT(*) AS samples, SUM(${rejectCase}) AS rejects,
        SUM(${needsHumanCase}) AS needs_human, SUM(${oscillationCase}) AS oscillations
      FROM ${tasks} INDEXED BY tasks_evidence_idx WHERE ${settledGoal(lower(r.from), r.to)} GROUP BY 1, 2`,
  );
  if (plan.days) {
    parts.unshift(
      sql`SELECT ${topologyEvidenceDays.agent} AS agent, ${topologyEvidenceDays.taskClass} AS task_class, ${topologyEvidenceDays.samples} AS samples,
          ${topologyEvidenceDays.rejects} AS rejects, ${topologyEvidenceDays.needsHuman} AS needs_human, ${topologyEvidenceDays.oscillations} AS oscillations
        FROM ${topologyEvidenceDays} WHERE ${topologyEvidenceDays.day} >= ${lower(plan.days.from)} AND ${topologyEvidenceDays.day} < ${plan.days.to}`,
    );
  }
  return sql`SELECT agent, task_class, SUM(samples) AS samples, SUM(rejects) AS rejects, SUM(needs_human) AS needs_human, SUM(oscillations) AS oscillations
    FROM (${sql.join(parts, sql` UNION ALL `)}) GROUP BY agent, task_class`;
}

/** The evidence cells of the window; `folded` null counts everything from `tasks`. */
export async function loadEvidenceCells(db: Db, since: string, folded: FoldedRange | null = null): Promise<Cell[]> {
  return evidenceCells(await evidenceQuery(db, since, folded));
}

/**
 * The evidence query un-executed, for a caller's own `db.batch`; `evidenceCells` reads its rows. A
 * select from the SQL rather than `db.all(sql)`: drizzle's D1 batch cannot bind a raw query's parameters.
 * One row per agent, its cells as one JSON array: mapping a row per cell through drizzle took about as
 * much of a tick's CPU as everything else it does (bench/topology-tick), and a row per agent keeps each
 * value far below D1's limit on one string (2,000,000 bytes), which all the cells in one value would
 * reach at some ten thousand of them.
 */
export function evidenceQuery(db: Db, since: string, folded: FoldedRange | null, guard?: SQL) {
  return db
    .select({
      agent: sql<string>`agent`,
      cells: sql<string>`json_group_array(json_array(task_class, samples, rejects, needs_human, oscillations))`,
    })
    .from(sql`(${evidenceSql(since, folded, guard)})`)
    .groupBy(sql`agent`);
}

type CellTuple = [taskClass: string, samples: number, rejects: number, needsHuman: number, oscillations: number];

export function evidenceCells(rows: readonly { agent: string; cells: string }[]): Cell[] {
  const cells: Cell[] = [];
  for (const { agent, cells: json } of rows) {
    for (const [task_class, samples, rejects, needs_human, oscillations] of JSON.parse(json) as CellTuple[]) {
      cells.push({
        agent,
        task_class,
        samples: Number(samples),
        rejects: Number(rejects),
        needs_human: Number(needs_human),
        oscillations: Number(oscillations),
      });
    }
  }
  return cells.sort(byAgentThenClass);
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
