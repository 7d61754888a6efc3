import { SETTLED_TASK_STATUSES, type PauseClass, type TaskMode, type TaskStatus } from "../db/schema";

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
 * ordered by agent then class. The tick computes the same cells in SQL (`loadEvidenceCells` in
 * evidence-sql.ts), one aggregate query; a test holds the two to the same answer.
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

export function byAgentThenClass(a: Cell, b: Cell) {
  return a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : a.task_class < b.task_class ? -1 : a.task_class > b.task_class ? 1 : 0;
}

const DAY_MS = 86_400_000;

/** The UTC day boundary at or before `iso` (ISO-8601 with milliseconds, as toISOString writes). */
export function floorDay(iso: string): string {
  return `${iso.slice(0, 10)}T00:00:00.000Z`;
}

/** The UTC day boundary at or after `iso`. */
export function ceilDay(iso: string): string {
  const floor = floorDay(iso);
  return floor === iso ? iso : new Date(Date.parse(floor) + DAY_MS).toISOString();
}

/** The whole UTC days the counters hold: [from, through). */
export interface FoldedRange {
  from: string;
  through: string;
}

/**
 * Which parts of the window come from folded day counters and which from tasks directly. Whole days
 * the counters hold inside the window come from them; the rest of the window (its partial first day,
 * days before the counters begin, and everything from `through` on) is counted from tasks. Nothing
 * folded that the window can use: all of it from tasks.
 */
export interface EvidencePlan {
  days: { from: string; to: string } | null;
  raw: { from: string; to: string | null }[];
}

export function evidencePlan(since: string, folded: FoldedRange | null): EvidencePlan {
  const firstWholeDay = ceilDay(since);
  const lower = folded && folded.from > firstWholeDay ? folded.from : firstWholeDay;
  if (folded === null || folded.through <= lower) return { days: null, raw: [{ from: since, to: null }] };
  return {
    days: { from: lower.slice(0, 10), to: folded.through.slice(0, 10) },
    raw: [...(since < lower ? [{ from: since, to: lower }] : []), { from: folded.through, to: null }],
  };
}
