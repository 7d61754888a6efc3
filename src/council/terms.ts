import { COUNCIL_RULES, DAY, HOUR, type CouncilRules } from "./rules";

export const DISSOLUTION_REASONS = [
  "term_expired",
  "session_cap",
  "majority_low_response",
  "majority_unreachable",
  "no_sessions_3d",
  "efficiency_stagnation",
] as const;
export type DissolutionReason = (typeof DISSOLUTION_REASONS)[number];

export interface TermFacts {
  started_at: string;
  ends_at: string;
  session_count: number;
  last_session_at: string | null;
  /** The term's mean member efficiency after each finished session, oldest first. */
  efficiency_samples: readonly number[];
}

export interface TermMemberFacts {
  node_id: string;
  requests: number;
  responses: number;
  last_heartbeat_at: string | null;
  webhook_verified: boolean;
  reputation: number;
}

/**
 * A member's efficiency: the share of requests to respond (a diverge invitation, a vote request)
 * it answered. Unknown (null) until it has been asked at least once: not asked is not idle.
 */
export function efficiency(m: Pick<TermMemberFacts, "requests" | "responses">): number | null {
  return m.requests > 0 ? Math.min(1, m.responses / m.requests) : null;
}

/**
 * The hourly term check (seed 004 "解散トリガー"): every trigger that holds, in a fixed order, so
 * the record names all of them. A majority is more than half of the members.
 */
export function termCheck(
  term: TermFacts,
  members: readonly TermMemberFacts[],
  nowMs: number,
  rules: CouncilRules = COUNCIL_RULES,
): DissolutionReason[] {
  const reasons: DissolutionReason[] = [];
  const majority = (n: number) => members.length > 0 && n * 2 > members.length;
  if (nowMs >= Date.parse(term.ends_at)) reasons.push("term_expired");
  if (term.session_count >= rules.termMaxSessions) reasons.push("session_cap");
  const lowResponders = members.filter((m) => m.requests >= rules.lowResponseMinRequests && (efficiency(m) ?? 1) < rules.lowResponseRate);
  if (majority(lowResponders.length)) reasons.push("majority_low_response");
  const unreachable = members.filter(
    (m) => m.last_heartbeat_at === null || nowMs - Date.parse(m.last_heartbeat_at) > rules.unreachableHours * HOUR,
  );
  if (majority(unreachable.length)) reasons.push("majority_unreachable");
  const lastActivity = Date.parse(term.last_session_at ?? term.started_at);
  if (nowMs - lastActivity >= rules.idleDays * DAY) reasons.push("no_sessions_3d");
  if (stagnating(term.efficiency_samples, rules)) reasons.push("efficiency_stagnation");
  return reasons;
}

/** The last `stagnationSessions` samples never rose, and the latest is below `stagnationBelow`. */
export function stagnating(samples: readonly number[], rules: CouncilRules = COUNCIL_RULES): boolean {
  const n = rules.stagnationSessions;
  if (samples.length < n) return false;
  const window = samples.slice(-n);
  for (let i = 1; i < window.length; i++) if (window[i]! > window[i - 1]!) return false;
  return window[window.length - 1]! < rules.stagnationBelow;
}

/**
 * Re-election (seed 004 "改選"): the top 40% of the term's members by efficiency stay, counted
 * over the whole term (9 → 3, 5 → 2, rounded down) and taken only from members with a verified
 * webhook and a known efficiency ≥ 0.3; every other member cools down for 7 days.
 */
export function reelect(
  members: readonly TermMemberFacts[],
  rules: CouncilRules = COUNCIL_RULES,
): { retained: string[]; cooled: string[] } {
  const seats = Math.floor(members.length * rules.reelectionKeepShare);
  const qualified = members
    .filter((m) => m.webhook_verified && (efficiency(m) ?? -1) >= rules.reelectionMinEfficiency)
    .sort((a, b) => efficiency(b)! - efficiency(a)! || b.reputation - a.reputation || (a.node_id < b.node_id ? -1 : 1));
  const retained = qualified.slice(0, seats).map((m) => m.node_id);
  const kept = new Set(retained);
  return { retained, cooled: members.filter((m) => !kept.has(m.node_id)).map((m) => m.node_id) };
}
