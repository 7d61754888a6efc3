import type { ProjectStatus, ProposalStatus } from "../db/schema";
import type { Runtime } from "../jobs/payloads";
import type { CouncilConfig, CouncilStagePlans } from "./config";
import type { Random } from "./random";
import type { CouncilRules } from "./rules";
import type { Candidate } from "./selection";
import type { AmendmentType, DialogRecord, DialogType, SessionState, VoteRecord } from "./session";
import type { VoteChoice } from "./tally";

export const PENDING_EVENT_TYPES = [
  "council_second_request",
  "council_invite",
  "council_vote",
  "council_community_vote",
  "council_decision",
  "council_decision_notification",
  "council_proposal_rejected",
] as const;
export type PendingEventType = (typeof PENDING_EVENT_TYPES)[number];

/**
 * What the machine reads of the council config. `model_work` says how synthesis and ethics were
 * decided (the session records it when each stage is decided); absent, it is read off the keys.
 */
export type MachineConfig = { model_work?: Pick<CouncilStagePlans, "synthesis" | "ethics"> } & Pick<
  CouncilConfig,
  | "progress_debounce_ms"
  | "synthesis"
  | "synthesis_runtime"
  | "synthesis_model"
  | "synthesis_timeout_ms"
  | "ethics_model"
  | "ethics_runtime"
  | "ethics_timeout_ms"
  | "ethics_denied_terms"
  | "veto_ratify_hours"
>;

/** Everything the machine may not produce itself: time, randomness, fresh ids, the rules and config. */
export interface MachineContext {
  now: Date;
  rules: CouncilRules;
  config: MachineConfig;
  random: Random;
  newId: (prefix: string) => string;
}

export interface DialogBody {
  dialog_type: DialogType;
  content?: string;
  reply_to?: string;
  amendment_type?: AmendmentType;
  amendment_target?: string;
  amendment_content?: string;
  vote?: VoteChoice;
  conditions?: string[];
  confidence?: number;
  reasoning?: string;
  proposal_hash?: string;
}

export type MachineInput =
  | {
      kind: "dialog";
      node_id: string;
      body: DialogBody;
      /** The node's seat in the frozen electorate, if any (looked up by the caller). */
      voter: { kind: "member" | "community"; weight: number } | null;
      already_voted: boolean;
      /** Whether `reply_to` names a dialog of this session (looked up by the caller). */
      reply_to_exists: boolean;
    }
  | {
      kind: "check";
      /** Loaded by the caller when `needs()` says so. */
      pool?: Candidate[];
      votes?: VoteRecord[];
      dialogs?: DialogRecord[];
    }
  | {
      kind: "job_ended";
      job_id: string;
      status: "completed" | "failed" | "dead";
      result?: Record<string, unknown>;
      error?: { code: string; message: string };
      reason?: string;
      votes?: VoteRecord[];
      dialogs?: DialogRecord[];
    }
  | { kind: "veto"; by: string; reason: string }
  | { kind: "ratify"; by: string };

export type Effect =
  | { kind: "record_dialog"; dialog: DialogRecord }
  | { kind: "record_vote"; vote: VoteRecord }
  | { kind: "notify"; to: string[]; type: PendingEventType; payload: Record<string, unknown> }
  /** Freeze the electorate (members as listed, community by the vote gates) and send the ballots. */
  | {
      kind: "open_voting";
      members: { node_id: string; weight: number }[];
      community: { weight: number; min_reputation: number; min_tier: number; exclude: string[] };
      payload: Record<string, unknown>;
    }
  | { kind: "feed"; type: string; payload: Record<string, unknown>; dedupe?: string }
  | { kind: "term_counts"; requests: string[]; responses: string[] }
  | { kind: "touch_node"; node_id: string }
  | {
      kind: "submit_job";
      purpose: "synthesis" | "ethics";
      job_id: string;
      runtime: Runtime;
      model?: string;
      prompt: string;
      timeout_ms: number;
    }
  | { kind: "proposal_status"; status: ProposalStatus }
  | { kind: "project_status"; to: ProjectStatus; from: ProjectStatus[] }
  /**
   * The save aborts (nothing is written) unless the session's project has not started: a veto can
   * take an approval back, not a project that runs (`STARTED_PROJECT`, `409 project_active`).
   */
  | { kind: "require_project_not_started" }
  | { kind: "execute_decision" }
  | { kind: "revoke_decision" }
  | { kind: "term_sample" }
  /**
   * Reputation the session moves (the `reputation` policy): on a decision, seated members who
   * answered, ballots cast and an approved proposer are credited; a veto charges the proposer, a
   * lapsed veto gives it back. Ledger references are the session's, so a repeat changes nothing.
   */
  | { kind: "reputation"; event: "decided" | "vetoed" | "veto_lapsed" };

export type Refusal = {
  ok: false;
  code:
    | "wrong_phase"
    | "not_eligible"
    | "stale_proposal"
    | "already_voted"
    | "validation_failed"
    | "rate_limited"
    | "forbidden"
    | "veto_lapsed";
  detail: string;
};

export type Advanced = { ok: true; state: SessionState; effects: Effect[]; changed: boolean };
