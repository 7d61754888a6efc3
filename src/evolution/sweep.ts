import { withState } from "./playbook-merge";
import { isLive, lastUsedAt, netScore, sortEntries, type Playbook, type PlaybookEntry } from "./playbook";

/**
 * Capacity and lifecycle (seed 003 §12.3 sweep.rs): per-agent capacity plus stale/archive, never a
 * hard delete. The seed reuses an existing Ebbinghaus retrievability judgement that this codebase
 * does not have; rather than invent a decay formula, the sweep uses plain age rules over the same
 * inputs (last use, net score), all parameters below. Probation entries are never swept: their
 * settle window (settle.ts) decides them.
 */
export const PLAYBOOK_CAPACITY = 50;
/** An active entry unused (no application, no state change) for this long goes stale. */
export const STALE_AFTER_DAYS = 30;
/** An active entry whose net score fell to this or below goes stale (it has hurt more than helped). */
export const HARMFUL_NET_SCORE = -3;
/** A stale entry left stale this long is archived (retired, kept). */
export const ARCHIVE_AFTER_DAYS = 60;

export interface SweepOptions {
  capacity?: number;
  stale_after_days?: number;
  archive_after_days?: number;
}

export interface SweepChange {
  entry_id: string;
  from: PlaybookEntry["state"];
  to: PlaybookEntry["state"];
  reason: "unused" | "harmful" | "archived" | "capacity";
}

export interface CapacityReport {
  live: number;
  capacity: number;
  /** Live entries above capacity (0 when within). Probation entries can hold it above until they settle. */
  over: number;
}

export function capacityReport(entries: readonly Pick<PlaybookEntry, "state">[], capacity = PLAYBOOK_CAPACITY): CapacityReport {
  const live = entries.filter(isLive).length;
  return { live, capacity, over: Math.max(0, live - capacity) };
}

const DAY_MS = 86_400_000;

/**
 * One sweep at `now`, in this order: (1) active entries unused for 30 days or with net score ≤ −3 go
 * stale; (2) entries stale for 60 days are archived (retired, reason `archived`); (3) while the live
 * entries exceed capacity, the weakest active entry goes stale (lowest net score, then least recently
 * used, then highest id). Returns the new playbook, the changes and the capacity after the sweep.
 */
export function sweepPlaybook(
  pb: Playbook,
  now: Date,
  opts: SweepOptions = {},
): { playbook: Playbook; changes: SweepChange[]; capacity: CapacityReport } {
  const capacity = opts.capacity ?? PLAYBOOK_CAPACITY;
  const staleMs = (opts.stale_after_days ?? STALE_AFTER_DAYS) * DAY_MS;
  const archiveMs = (opts.archive_after_days ?? ARCHIVE_AFTER_DAYS) * DAY_MS;
  const t = now.getTime();
  const changes: SweepChange[] = [];
  const next = new Map<string, PlaybookEntry>();
  const move = (e: PlaybookEntry, to: PlaybookEntry["state"], reason: SweepChange["reason"]) => {
    changes.push({ entry_id: e.entry_id, from: e.state, to, reason });
    next.set(e.entry_id, withState(e, to, reason, now));
  };

  for (const e of sortEntries(pb.entries)) {
    if (e.state === "active") {
      if (netScore(e) <= HARMFUL_NET_SCORE) move(e, "stale", "harmful");
      else if (t - Date.parse(lastUsedAt(e)) >= staleMs) move(e, "stale", "unused");
    } else if (e.state === "stale" && t - Date.parse(e.state_since) >= archiveMs) move(e, "retired", "archived");
  }

  const current = () => pb.entries.map((e) => next.get(e.entry_id) ?? e);
  let over = capacityReport(current(), capacity).over;
  if (over > 0) {
    const weakest = current()
      .filter((e) => e.state === "active")
      .sort(
        (a, b) =>
          netScore(a) - netScore(b) ||
          Date.parse(lastUsedAt(a)) - Date.parse(lastUsedAt(b)) ||
          (a.entry_id < b.entry_id ? 1 : a.entry_id > b.entry_id ? -1 : 0),
      );
    for (const e of weakest) {
      if (over === 0) break;
      move(e, "stale", "capacity");
      over--;
    }
  }
  const entries = sortEntries(current());
  return { playbook: { agent_id: pb.agent_id, entries }, changes, capacity: capacityReport(entries, capacity) };
}
