import { and, desc, eq, gte, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { SETTLED_TASK_STATUSES, tasks, type PauseClass, type TaskMode, type TaskStatus } from "../db/schema";

/** What evidence needs of a task (seed 000 step 1). */
export interface EvidenceTask {
  id: string;
  agent: string;
  task_class: string;
  mode: TaskMode;
  status: TaskStatus;
  retry_count: number;
  pause_class: PauseClass | null;
  settled_at: string | null;
}

/** Quality signals of one (agent, task_class) over the lookback window. */
export interface Cell {
  agent: string;
  task_class: string;
  samples: number;
  rejects: number;
  needs_human: number;
  /** Goal-loop no-progress stops: needs_human with pause_class `no_progress`. */
  oscillations: number;
}

export const MAX_SAMPLE_TASK_IDS = 10;

const SETTLED: ReadonlySet<string> = new Set(SETTLED_TASK_STATUSES);

/** A rejection: needs_human, failed, or any retry. Each task counts at most once. */
export function isReject(t: Pick<EvidenceTask, "status" | "retry_count">): boolean {
  return t.status === "needs_human" || t.status === "failed" || t.retry_count > 0;
}

export function rejectRate(c: Pick<Cell, "samples" | "rejects">): number {
  return c.samples === 0 ? 0 : c.rejects / c.samples;
}

export const needsHumanRate = (c: Pick<Cell, "samples" | "needs_human">) => (c.samples === 0 ? 0 : c.needs_human / c.samples);

/** The sample population: settled goal-mode tasks settled at or after `since`. */
export function inSample(t: EvidenceTask, since: string): boolean {
  return t.mode === "goal" && SETTLED.has(t.status) && t.settled_at !== null && t.settled_at >= since;
}

/**
 * The evidence, as a pure function over tasks: one cell per (agent, task_class) that has samples,
 * ordered by agent then class. The tick computes the same cells in SQL (`loadEvidenceCells`), one
 * aggregate query; a test holds the two to the same answer.
 */
export function computeEvidence(all: readonly EvidenceTask[], since: string): Cell[] {
  const cells = new Map<string, Cell>();
  for (const t of all) {
    if (!inSample(t, since)) continue;
    const key = JSON.stringify([t.agent, t.task_class]);
    const cell = cells.get(key) ?? { agent: t.agent, task_class: t.task_class, samples: 0, rejects: 0, needs_human: 0, oscillations: 0 };
    cell.samples++;
    if (isReject(t)) cell.rejects++;
    if (t.status === "needs_human") cell.needs_human++;
    if (t.status === "needs_human" && t.pause_class === "no_progress") cell.oscillations++;
    cells.set(key, cell);
  }
  return [...cells.values()].sort(byAgentThenClass);
}

/** Up to ten sample ids of a cell: rejections first, then newest first, then by id. */
export function sampleTaskIds(all: readonly EvidenceTask[], since: string, agent: string, taskClass: string): string[] {
  return all
    .filter((t) => inSample(t, since) && t.agent === agent && t.task_class === taskClass)
    .sort(
      (a, b) =>
        Number(isReject(b)) - Number(isReject(a)) || (b.settled_at ?? "").localeCompare(a.settled_at ?? "") || a.id.localeCompare(b.id),
    )
    .slice(0, MAX_SAMPLE_TASK_IDS)
    .map((t) => t.id);
}

function byAgentThenClass(a: Cell, b: Cell) {
  return a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : a.task_class < b.task_class ? -1 : a.task_class > b.task_class ? 1 : 0;
}

const rejectSql = sql`(${tasks.status} IN ('needs_human', 'failed') OR ${tasks.retryCount} > 0)`;

function sampleWhere(since: string) {
  return and(eq(tasks.mode, "goal"), inArray(tasks.status, [...SETTLED_TASK_STATUSES]), gte(tasks.settledAt, since));
}

/**
 * The evidence in one aggregate query over the settled goal tasks of the window. The covering index
 * `tasks_evidence_idx` (mode, settled_at, status, assigned_to, task_class, …) makes it a range scan.
 */
export async function loadEvidenceCells(db: Db, since: string): Promise<Cell[]> {
  const rows = await db
    .select({
      agent: tasks.assignedTo,
      task_class: tasks.taskClass,
      samples: sql<number>`COUNT(*)`,
      rejects: sql<number>`SUM(CASE WHEN ${rejectSql} THEN 1 ELSE 0 END)`,
      needs_human: sql<number>`SUM(CASE WHEN ${tasks.status} = 'needs_human' THEN 1 ELSE 0 END)`,
      oscillations: sql<number>`SUM(CASE WHEN ${tasks.status} = 'needs_human' AND ${tasks.pauseClass} = 'no_progress' THEN 1 ELSE 0 END)`,
    })
    .from(tasks)
    .where(sampleWhere(since))
    .groupBy(tasks.assignedTo, tasks.taskClass);
  return rows
    .map((r) => ({
      ...r,
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
    .where(and(sampleWhere(since), eq(tasks.assignedTo, agent), eq(tasks.taskClass, taskClass)))
    .orderBy(desc(rejectSql), desc(tasks.settledAt), tasks.id)
    .limit(MAX_SAMPLE_TASK_IDS);
  return rows.map((r) => r.id);
}
