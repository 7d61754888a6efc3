import { rejectRate, needsHumanRate, type Cell } from "./evidence";

export interface ProposalRule {
  min_samples: number;
  reject_rate_threshold: number;
}

/** Why an edge that met the threshold got no proposal this tick. */
export type SkipReason = "pending_proposal" | "override_in_force" | "cooldown" | "no_parent" | "no_better_sibling";

export interface ProposedReroute {
  task_class: string;
  from_agent: string;
  to_agent: string;
  from: Cell;
  sibling: Cell;
}

export interface ProposalDecision {
  proposal: ProposedReroute | null;
  skipped: { task_class: string; agent: string; reason: SkipReason }[];
}

// Rates are ratios of small integers; a tolerance keeps "exactly at the threshold" at the threshold.
const EPSILON = 1e-12;

/** reject rate ≥ threshold, counting a rate exactly at the threshold as meeting it. */
export function meetsThreshold(cell: Cell, rule: ProposalRule): boolean {
  return cell.samples >= rule.min_samples && rejectRate(cell) >= rule.reject_rate_threshold - EPSILON;
}

/**
 * Seed 000 step 2, as a pure function. An (agent, class) with at least min_samples and a reject rate
 * at or over the threshold gets a reroute proposal to a sibling (same reports_to parent) that does the
 * same class strictly better with at least min_samples. The worst edge that can be proposed wins (rate,
 * then samples, then class and agent for determinism); the best sibling is the lowest rate (then most
 * samples, then id). At most one proposal; none when no sibling qualifies — an empty result beats a
 * made-up one. `blocked` says whether an edge is held back (pending proposal, override, cooldown).
 */
export function proposeReroute(
  cells: readonly Cell[],
  parentOf: ReadonlyMap<string, string | null>,
  rule: ProposalRule,
  blocked: (taskClass: string, fromAgent: string) => SkipReason | null,
): ProposalDecision {
  const skipped: ProposalDecision["skipped"] = [];
  const candidates = cells
    .filter((c) => meetsThreshold(c, rule))
    .sort(
      (a, b) => rejectRate(b) - rejectRate(a) || b.samples - a.samples || compare(a.task_class, b.task_class) || compare(a.agent, b.agent),
    );
  for (const from of candidates) {
    const held = blocked(from.task_class, from.agent);
    if (held) {
      skipped.push({ task_class: from.task_class, agent: from.agent, reason: held });
      continue;
    }
    const parent = parentOf.get(from.agent) ?? null;
    if (parent === null) {
      skipped.push({ task_class: from.task_class, agent: from.agent, reason: "no_parent" });
      continue;
    }
    const siblings = cells
      .filter(
        (s) =>
          s.task_class === from.task_class &&
          s.agent !== from.agent &&
          (parentOf.get(s.agent) ?? null) === parent &&
          s.samples >= rule.min_samples &&
          rejectRate(s) < rejectRate(from) - EPSILON,
      )
      .sort((a, b) => rejectRate(a) - rejectRate(b) || b.samples - a.samples || compare(a.agent, b.agent));
    const sibling = siblings[0];
    if (!sibling) {
      skipped.push({ task_class: from.task_class, agent: from.agent, reason: "no_better_sibling" });
      continue;
    }
    return { proposal: { task_class: from.task_class, from_agent: from.agent, to_agent: sibling.agent, from, sibling }, skipped };
  }
  return { proposal: null, skipped };
}

/** The evidence attached to a proposal and its approval. */
export function proposalEvidence(p: ProposedReroute, sampleTaskIds: string[], lookbackDays: number) {
  return {
    samples: p.from.samples,
    reject_rate: rejectRate(p.from),
    needs_human_rate: needsHumanRate(p.from),
    oscillations: p.from.oscillations,
    sample_task_ids: sampleTaskIds,
    sibling: { agent: p.sibling.agent, samples: p.sibling.samples, reject_rate: rejectRate(p.sibling) },
    lookback_days: lookbackDays,
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
