import { COUNCIL_RULES, HOUR, type CouncilRules } from "./rules";
import { pickIndex, shuffled, type Random } from "./random";

/** What selection knows about a node. Times are ISO strings; null means "never". */
export interface Candidate {
  node_id: string;
  reputation: number;
  model_tier: number;
  last_heartbeat_at: string | null;
  last_dialog_at: string | null;
  cooldown_until: string | null;
  /** Set while an admin has the node suspended: it is never seated (absent: not suspended). */
  suspended_at?: string | null;
}

export type Ineligibility = "suspended" | "reputation" | "model_tier" | "no_recent_heartbeat" | "cooling_down" | "excluded";

/**
 * Why a node cannot deliberate now (API.md: reputation ≥ 40, tier ≥ 3, heartbeat within 48 h, not
 * cooling down; and not suspended by an admin). The token is what a session records for a term
 * member it did not seat.
 */
export function memberIneligibility(c: Candidate, nowMs: number, rules: CouncilRules = COUNCIL_RULES): Ineligibility | null {
  if (c.suspended_at) return "suspended";
  if (c.reputation < rules.memberMinReputation) return "reputation";
  if (c.model_tier < rules.memberMinTier) return "model_tier";
  if (!within(c.last_heartbeat_at, nowMs, rules.heartbeatWindowHours * HOUR)) return "no_recent_heartbeat";
  if (c.cooldown_until !== null && Date.parse(c.cooldown_until) > nowMs) return "cooling_down";
  return null;
}

/** Heartbeat or dialog within 72 h: such nodes are preferred, for both the top and the random part. */
export function isActive(c: Candidate, nowMs: number, rules: CouncilRules = COUNCIL_RULES): boolean {
  const window = rules.activeWindowHours * HOUR;
  return within(c.last_heartbeat_at, nowMs, window) || within(c.last_dialog_at, nowMs, window);
}

function within(at: string | null, nowMs: number, windowMs: number): boolean {
  if (at === null) return false;
  const t = Date.parse(at);
  return t <= nowMs && nowMs - t <= windowMs;
}

export type Selection =
  | { ok: true; members: { node_id: string; role: "member" | "devils_advocate"; picked_by: "reputation" | "random" }[] }
  | { ok: false; reason: "insufficient_members"; eligible: number };

/** Active nodes first, then higher reputation, then node id (so ties are deterministic). */
function byActiveThenReputation(nowMs: number, rules: CouncilRules) {
  return (a: Candidate, b: Candidate) =>
    Number(isActive(b, nowMs, rules)) - Number(isActive(a, nowMs, rules)) ||
    b.reputation - a.reputation ||
    (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0);
}

/**
 * Member selection (API.md "Clarifications"): from the eligible pool (minus `exclude`, e.g. the
 * proposer), `count` members (default: as many as the pool allows, at most 9), 60% by top
 * reputation and 40% at random from the rest, active nodes first in both parts; then exactly one
 * devil's advocate, at random. Fewer than `minimum` (5) eligible → insufficient_members.
 * The 60% is rounded to the nearest whole member (9 → 5 + 4, 5 → 3 + 2).
 */
export function selectMembers(
  pool: readonly Candidate[],
  opts: { nowMs: number; random: Random; exclude?: ReadonlySet<string>; count?: number; minimum?: number; rules?: CouncilRules },
): Selection {
  const rules = opts.rules ?? COUNCIL_RULES;
  const minimum = opts.minimum ?? rules.minMembers;
  const eligible = pool.filter((c) => !opts.exclude?.has(c.node_id) && memberIneligibility(c, opts.nowMs, rules) === null);
  const count = Math.min(opts.count ?? rules.maxMembers, eligible.length);
  if (eligible.length < minimum || count < minimum) return { ok: false, reason: "insufficient_members", eligible: eligible.length };
  const picked = pickTopAndRandom(eligible, count, opts.nowMs, opts.random, rules);
  const devil = pickIndex(opts.random, picked.length);
  return {
    ok: true,
    members: picked.map((m, i) => ({ node_id: m.node_id, role: i === devil ? "devils_advocate" : "member", picked_by: m.picked_by })),
  };
}

/** The 60/40 draw without the role assignment; also used to fill seats left by re-election. */
export function pickTopAndRandom(
  eligible: readonly Candidate[],
  count: number,
  nowMs: number,
  random: Random,
  rules: CouncilRules = COUNCIL_RULES,
): { node_id: string; picked_by: "reputation" | "random" }[] {
  const n = Math.min(count, eligible.length);
  const ranked = [...eligible].sort(byActiveThenReputation(nowMs, rules));
  const topCount = Math.round(n * rules.topShare);
  const top = ranked.slice(0, topCount);
  const rest = ranked.slice(topCount);
  // Random part: active nodes first, each group shuffled.
  const active = shuffled(
    rest.filter((c) => isActive(c, nowMs, rules)),
    random,
  );
  const inactive = shuffled(
    rest.filter((c) => !isActive(c, nowMs, rules)),
    random,
  );
  const randomPart = [...active, ...inactive].slice(0, n - topCount);
  return [
    ...top.map((c) => ({ node_id: c.node_id, picked_by: "reputation" as const })),
    ...randomPart.map((c) => ({ node_id: c.node_id, picked_by: "random" as const })),
  ];
}

/**
 * Replacements for diverge non-responders: eligible nodes not yet involved in the session, highest
 * reputation (active first) first. Returns at most `count`; fewer when the pool runs dry.
 */
export function pickReplacements(
  pool: readonly Candidate[],
  involved: ReadonlySet<string>,
  count: number,
  nowMs: number,
  rules: CouncilRules = COUNCIL_RULES,
) {
  return pool
    .filter((c) => !involved.has(c.node_id) && memberIneligibility(c, nowMs, rules) === null)
    .sort(byActiveThenReputation(nowMs, rules))
    .slice(0, count)
    .map((c) => c.node_id);
}

/**
 * Auto-second (seed 004 step 1): a proposal from a current council member, or from a node with
 * reputation ≥ 60, skips seconding and goes straight to diverge. Null: it needs a second.
 */
export function autoSecondReason(
  proposer: { node_id: string; reputation: number },
  termMemberIds: readonly string[],
  rules: CouncilRules = COUNCIL_RULES,
): "current_member" | "reputation" | null {
  if (termMemberIds.includes(proposer.node_id)) return "current_member";
  if (proposer.reputation >= rules.autoSecondReputation) return "reputation";
  return null;
}
