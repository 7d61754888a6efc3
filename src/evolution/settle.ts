import { caseScores, type CaseResult, type CaseVerdict } from "./aee-measure";
import { DEFAULT_NOISE_BAND } from "./commit-gate";
import type { EntryChange } from "./playbook-merge";
import { withState } from "./playbook-merge";
import { MAX_FAILURE_NOTES, sortEntries, type Playbook, type PlaybookEntry } from "./playbook";

/**
 * Per-entry observation windows (seed 003 §12.5.4 settle.rs + pending.rs): each committed entry waits
 * `aee_settle_hours` (default 24, at most 30 days) and is then confirmed or rolled back by its own
 * linked eval cases alone. Only the entries that regressed roll back; the rest of their batch stays.
 * This replaces chapter 4's "confirm or roll back the whole SOUL.md".
 */
export const MAX_SETTLE_HOURS = 30 * 24;
const HOUR_MS = 3_600_000;

/** One committed change waiting for its window to end (what pending.rs queues). */
export interface SettleItem {
  entry_id: string;
  round_id: string;
  op: "add" | "update";
  /** The entry as it was before the change (null for an add): what a rollback restores. */
  before: PlaybookEntry | null;
  /** The entry version the commit produced: a later change supersedes this item. */
  after_version: number;
  /** The entry's own linked cases at the commit: the only cases that judge it. */
  cases: string[];
  /** Those cases as the commit measured them on the shadow playbook (a case it did not run is absent). */
  baseline: Record<string, CaseVerdict>;
  committed_at: string;
  due_at: string;
  /** Extensions so far (a window whose cases could not be scored is extended, up to the 30-day cap). */
  extensions: number;
}

export function clampSettleHours(hours: number): number {
  if (!Number.isFinite(hours) || hours <= 0) return 24;
  return Math.min(MAX_SETTLE_HOURS, hours);
}

/** Settle items for a commit's changes (retirements have nothing to observe). */
export function settleItemsFor(
  changes: readonly EntryChange[],
  shadowResults: readonly CaseResult[],
  ctx: { round_id: string; now: Date; settle_hours: number },
): SettleItem[] {
  const byCase = new Map(shadowResults.map((r) => [r.case_ref, r.verdict]));
  const due = new Date(ctx.now.getTime() + clampSettleHours(ctx.settle_hours) * HOUR_MS).toISOString();
  return changes.flatMap((c): SettleItem[] =>
    c.op === "retire"
      ? []
      : [
          {
            entry_id: c.entry_id,
            round_id: ctx.round_id,
            op: c.op,
            before: c.before,
            after_version: c.after.version,
            cases: [...c.after.eval_cases],
            baseline: Object.fromEntries(c.after.eval_cases.flatMap((ref) => (byCase.has(ref) ? [[ref, byCase.get(ref)!]] : []))),
            committed_at: ctx.now.toISOString(),
            due_at: due,
            extensions: 0,
          },
        ],
  );
}

export type SettleVerdict =
  | { verdict: "not_due" }
  | { verdict: "accept"; reason: "cases_held"; baseline_rate: number | null; observed_rate: number }
  | {
      verdict: "rollback";
      reason: "cases_regressed" | "unmeasured_at_cap";
      baseline_rate: number | null;
      observed_rate: number | null;
    }
  | { verdict: "extend"; reason: "unmeasured"; next_due_at: string };

/**
 * The item's verdict at `now` from its own cases' results on the current playbook. Regressed: the
 * observed pass rate is below the commit-time rate by more than the cases noise band (0.05). A window
 * whose cases cannot be scored is extended by another window, until 30 days after the commit; at that
 * cap it rolls back (unknown is not zero, and an entry never shown to hold does not stay).
 */
export function settleVerdict(
  item: SettleItem,
  observed: readonly CaseResult[],
  ctx: { now: Date; settle_hours: number; band?: number },
): SettleVerdict {
  if (ctx.now.getTime() < Date.parse(item.due_at)) return { verdict: "not_due" };
  const own = new Set(item.cases);
  const seen = observed.filter((r) => own.has(r.case_ref));
  const now = caseScores(seen).pass_rate;
  const base = caseScores(Object.entries(item.baseline).map(([case_ref, verdict]) => ({ case_ref, verdict }))).pass_rate;
  if (now === null) {
    const cap = Date.parse(item.committed_at) + MAX_SETTLE_HOURS * HOUR_MS;
    const next = Math.min(cap, ctx.now.getTime() + clampSettleHours(ctx.settle_hours) * HOUR_MS);
    if (ctx.now.getTime() >= cap) return { verdict: "rollback", reason: "unmeasured_at_cap", baseline_rate: base, observed_rate: null };
    return { verdict: "extend", reason: "unmeasured", next_due_at: new Date(next).toISOString() };
  }
  const band = ctx.band ?? DEFAULT_NOISE_BAND.cases;
  if (base !== null && Math.round((base - now) * 1e9) / 1e9 > band)
    return { verdict: "rollback", reason: "cases_regressed", baseline_rate: base, observed_rate: now };
  return { verdict: "accept", reason: "cases_held", baseline_rate: base, observed_rate: now };
}

export interface SettleOutcome {
  entry_id: string;
  result: "accepted" | "rolled_back" | "extended" | "superseded" | "missing";
}

/**
 * Applies settle verdicts, each to its own entry and nothing else. accept: probation → active and the
 * streak grows by one. rollback: an added entry is retired (`settle_rollback`); an updated one gets its
 * previous content, signals, cases, assertions, category and state back as a new version, with a
 * failure note. An entry changed again since the commit is `superseded` (its newer change has its own
 * item). Extended items are returned with their new due time for the queue.
 */
export function applySettlements(
  pb: Playbook,
  decisions: readonly { item: SettleItem; verdict: SettleVerdict }[],
  now: Date,
): { playbook: Playbook; outcomes: SettleOutcome[]; requeue: SettleItem[] } {
  const byId = new Map(pb.entries.map((e) => [e.entry_id, e]));
  const outcomes: SettleOutcome[] = [];
  const requeue: SettleItem[] = [];
  const at = now.toISOString();
  for (const { item, verdict } of decisions) {
    if (verdict.verdict === "not_due") {
      requeue.push(item);
      continue;
    }
    const e = byId.get(item.entry_id);
    if (!e) {
      outcomes.push({ entry_id: item.entry_id, result: "missing" });
      continue;
    }
    if (e.version !== item.after_version || e.state === "retired") {
      outcomes.push({ entry_id: item.entry_id, result: "superseded" });
      continue;
    }
    if (verdict.verdict === "extend") {
      requeue.push({ ...item, due_at: verdict.next_due_at, extensions: item.extensions + 1 });
      outcomes.push({ entry_id: item.entry_id, result: "extended" });
      continue;
    }
    if (verdict.verdict === "accept") {
      byId.set(e.entry_id, { ...withState(e, "active", "settle_accept", now), success_streak: e.success_streak + 1 });
      outcomes.push({ entry_id: item.entry_id, result: "accepted" });
      continue;
    }
    const note = {
      at,
      round_id: item.round_id,
      reason: `settle_rollback:${verdict.reason}`,
      detail: `own cases ${verdict.baseline_rate ?? "unmeasured"} at commit, ${verdict.observed_rate ?? "unmeasured"} at settle`,
    };
    const failure_history = [...e.failure_history, note].slice(-MAX_FAILURE_NOTES);
    if (item.op === "add" || !item.before) {
      byId.set(e.entry_id, { ...withState(e, "retired", "settle_rollback", now), failure_history });
    } else {
      const b = item.before;
      byId.set(e.entry_id, {
        ...withState(e, b.state, "settle_rollback", now),
        category: b.category,
        signals_match: b.signals_match,
        content: b.content,
        eval_cases: b.eval_cases,
        assertions: b.assertions,
        success_streak: b.success_streak,
        failure_history,
        version: e.version + 1,
      });
    }
    outcomes.push({ entry_id: item.entry_id, result: "rolled_back" });
  }
  return { playbook: { agent_id: pb.agent_id, entries: sortEntries([...byId.values()]) }, outcomes, requeue };
}
