import type { ProposalKind } from "../db/schema";
import type { StagePlan } from "../jobs/model-work";
import type { Ineligibility } from "./selection";
import type { Outcome, Tally, VoteChoice } from "./tally";

export const PHASES = [
  "seconding",
  "diverge",
  "challenge",
  "voting",
  "converging",
  "approved",
  "rejected",
  "revise",
  "tabled",
  "abandoned",
  "vetoed",
] as const;
export type Phase = (typeof PHASES)[number];
export const OPEN_PHASES: readonly Phase[] = ["seconding", "diverge", "challenge", "voting", "converging"];
export const DECIDED_PHASES: readonly Phase[] = ["approved", "rejected", "revise"];

export const DIALOG_TYPES = ["second", "assess", "challenge", "agree", "develop", "amend", "vote"] as const;
export type DialogType = (typeof DIALOG_TYPES)[number];
export const AMENDMENT_TYPES = ["add", "remove", "replace"] as const;
export type AmendmentType = (typeof AMENDMENT_TYPES)[number];

/** Which dialog types each open phase takes; anything else is `409 wrong_phase`. */
export const PHASE_DIALOGS: Partial<Record<Phase, readonly DialogType[]>> = {
  seconding: ["second"],
  diverge: ["assess", "challenge", "agree", "develop"],
  challenge: ["assess", "challenge", "agree", "develop", "amend"],
  voting: ["vote"],
};

export type MemberRole = "member" | "devils_advocate";

export interface SessionMember {
  node_id: string;
  role: MemberRole;
  /** `term`: a member of the council term (its answers count toward term efficiency). */
  source: "term" | "pool" | "replacement";
  joined_at: string;
  responded_at?: string;
  challenge_posted?: boolean;
  voted?: boolean;
  replaced_by?: string;
  replaced_at?: string;
  replaces?: string;
}

/** A term member not seated in a session because it was not eligible when the session opened. */
export interface SkippedMember {
  node_id: string;
  /** `memberIneligibility`'s token: suspended, reputation, model_tier, no_recent_heartbeat, cooling_down. */
  reason: Ineligibility;
}

export interface Amendment {
  amendment_id: string;
  by: string;
  type: AmendmentType;
  target: string;
  content: string;
  created_at: string;
  support: string[];
  objections: string[];
  status: "proposed" | "accepted" | "rejected";
}

export interface EthicsRuleResult {
  rule: string;
  passed: boolean;
  detail?: string;
}

export interface EthicsRecord {
  rules: EthicsRuleResult[];
  model: { status: "off" | "not_needed" | "pending" | "passed" | "revise" | "unavailable"; job_id?: string; reason?: string };
  /** Set when the review turned an approval into `revise`. */
  revised_because?: string;
}

export interface Decision {
  outcome: Outcome;
  /** What the ballots said before the ethics review. */
  tallied_outcome: Outcome;
  confidence: number | null;
  consensus: string;
  synthesis_source: "model" | "template";
  synthesis_note?: string;
  quality_score: number | null;
  conditions: string[];
  ethics: EthicsRecord;
  tally: Tally;
  decided_at: string;
}

export interface Veto {
  by: string;
  reason: string;
  at: string;
  ratify_by: string;
  status: "pending_ratification" | "ratified" | "lapsed";
  phase_before: Phase;
  ratified_by?: string;
  ratified_at?: string;
  lapsed_at?: string;
}

export type DeadlineName = "seconding" | "diverge" | "challenge" | "voting" | "no_response" | "synthesis" | "ethics";

export interface SessionState {
  session_id: string;
  proposal_id: string;
  term_id: string | null;
  proposer_id: string;
  kind: ProposalKind;
  proposal: { title: string; body: string; project?: { name: string; summary: string; repo_name?: string } };
  project_id?: string;
  phase: Phase;
  phase_started_at: string;
  created_at: string;
  members: SessionMember[];
  /** Term members left out when the session opened, with why (their seats were filled from the pool). */
  skipped_members?: SkippedMember[];
  replacement_rounds: number;
  seconded?: { by: string | null; at: string; auto: boolean; reason: "current_member" | "reputation" | "seconded" };
  first_response_at?: string;
  amendments: Amendment[];
  deadlines: Partial<Record<DeadlineName, string>>;
  proposal_hash?: string;
  electorate?: { members: { node_id: string; weight: number }[]; community_weight: number; frozen_at: string };
  /** Tallied when voting closed; the decision follows once synthesis (and ethics) are done. */
  pending?: { outcome: Outcome; confidence: number | null; tally: Tally; closed_at: string };
  synthesis?: {
    status: "pending" | "done";
    job_id?: string;
    runtime?: string;
    source?: "model" | "template";
    text?: string;
    note?: string;
  };
  ethics?: EthicsRecord;
  /** How synthesis and the ethics model review were decided, recorded when each was (`model_work`). */
  model_work?: { synthesis?: StagePlan; ethics?: StagePlan };
  decision?: Decision;
  veto?: Veto;
  end_reason?: string;
  dialog_count: number;
  dialogs_by_node: Record<string, number>;
  /** A dialog asked for a progress check by then (debounced: at most one pending). */
  progress_due_at?: string;
}

/** A dialog row as the trail stores it. */
export interface DialogRecord {
  id: string;
  seq: number;
  node_id: string;
  role: MemberRole | "proposer" | "community";
  phase: Phase;
  dialog_type: DialogType;
  content: string | null;
  reply_to: string | null;
  amendment_type: AmendmentType | null;
  amendment_target: string | null;
  amendment_content: string | null;
  created_at: string;
}

/** A ballot row. */
export interface VoteRecord {
  node_id: string;
  dialog_id: string;
  kind: "member" | "community";
  vote: VoteChoice;
  weight: number;
  confidence: number;
  conditions: string[];
  reasoning: string | null;
  proposal_hash: string;
  created_at: string;
}

export function activeMembers(s: SessionState): SessionMember[] {
  return s.members.filter((m) => !m.replaced_by);
}

export function devilsAdvocate(s: SessionState): SessionMember | undefined {
  return activeMembers(s).find((m) => m.role === "devils_advocate");
}
