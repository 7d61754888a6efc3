import * as z from "zod";
import { defineConfigSection } from "../lib/config";

const credit = (value: number) => z.number().min(0).max(20).default(value);
const dailyCap = (value: number) => z.number().min(0).max(100).default(value);
const penalty = (value: number) => z.number().min(0).max(50).default(value);

/**
 * `reputation` config section: how reputation moves (seed 004 sets the floors, vote ≥ 20, propose
 * ≥ 30, seat ≥ 40, auto-second ≥ 60, and not how a node gets there). Every movement is a ledger row
 * (src/nodes/reputation.ts) unique per (node, source, reference), applied in the batch of the change
 * that earned it and clamped to [0, 100].
 *
 * Credits are for work somebody can check, each capped per source per UTC day:
 * - `task_completed`: a swarm task completed and verified: a project task whose completion carries
 *   one of the node's recorded contribution commits to it, or a task a manager verified. A bare
 *   "done" earns nothing.
 * - `session_participation`: a seat the node was given in a council session and answered in (a
 *   diverge or challenge dialog), counted when the session is decided.
 * - `vote_cast`: a ballot in a session that was decided.
 * - `proposal_approved`: the proposer of an approved proposal.
 *
 * Penalties (not capped): `claim_abandoned` (a claim that lapsed unfinished; releasing is free),
 * `scan_failed` (a proposal the static security scan refused, once per text), `proposal_vetoed`
 * (the proposer of a vetoed session; given back if the veto lapses).
 *
 * Decay: a node with no heartbeat, dialog or earned credit for `decay_after_days` loses
 * `decay_per_day` a day (the hourly council tick), never below `council.initial_reputation`.
 */
export const reputationConfig = defineConfigSection(
  "reputation",
  z.object({
    task_completed_credit: credit(4),
    task_completed_daily_cap: dailyCap(8),
    session_participation_credit: credit(1),
    session_participation_daily_cap: dailyCap(2),
    vote_cast_credit: credit(0.5),
    vote_cast_daily_cap: dailyCap(1),
    proposal_approved_credit: credit(3),
    proposal_approved_daily_cap: dailyCap(3),
    claim_abandoned_penalty: penalty(2),
    scan_failed_penalty: penalty(5),
    proposal_vetoed_penalty: penalty(5),
    decay_after_days: z.number().int().min(1).max(365).default(14),
    decay_per_day: z.number().min(0).max(10).default(1),
  }),
);
export type ReputationConfig = z.infer<typeof reputationConfig.schema>;

/** The sources that earn, with their amount and daily cap in the config. */
export const CREDIT_SOURCES = ["task_completed", "session_participation", "vote_cast", "proposal_approved"] as const;
export type CreditSource = (typeof CREDIT_SOURCES)[number];
export const PENALTY_SOURCES = ["claim_abandoned", "scan_failed", "proposal_vetoed"] as const;
export type PenaltySource = (typeof PENALTY_SOURCES)[number];

export function creditOf(config: ReputationConfig, source: CreditSource): { amount: number; cap: number } {
  return { amount: config[`${source}_credit`], cap: config[`${source}_daily_cap`] };
}

export function penaltyOf(config: ReputationConfig, source: PenaltySource): number {
  return config[`${source}_penalty`];
}
