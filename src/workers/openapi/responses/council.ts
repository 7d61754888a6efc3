import * as z from "zod";
import type { checkAgainstPrinciples, queryPrinciples } from "../../../council/principles";
import type { SubmitResult } from "../../../council/proposals";
import { AMENDMENT_TYPES, DIALOG_TYPES, PHASES, type DialogRecord } from "../../../council/session";
import { VOTES } from "../../../council/tally";
import { DISSOLUTION_REASONS } from "../../../council/terms";
import type { getTermDetail, listSessions, listTerms, proposalView, sessionDetail, termView } from "../../../council/views";
import { PROPOSAL_KINDS, PROPOSAL_STATUSES, TERM_STATUSES } from "../../../db/schema";
import { MODEL_WORK_REASONS } from "../../../jobs/model-work";
import { timestamp } from "./common";

/** A decision's outcome (`Outcome` in council/tally.ts). */
const outcome = z.enum(["approved", "rejected", "revise"]);
const phase = z.enum(PHASES);

// ---------------------------------------------------------------------------------------------
// Terms

export const councilTermSchema = z.object({
  term_id: z.string(),
  number: z.number().int(),
  status: z.enum(TERM_STATUSES),
  started_at: timestamp,
  ends_at: timestamp,
  session_count: z.number().int(),
  last_session_at: timestamp.nullable(),
  efficiency_samples: z.array(z.number()),
  dissolved_at: timestamp.optional(),
  dissolution_reasons: z.array(z.enum(DISSOLUTION_REASONS)).nullable().optional(),
}) satisfies z.ZodType<ReturnType<typeof termView>>;

export const councilTermMemberSchema = z.object({
  node_id: z.string(),
  /** Null until the member has been asked at least once. */
  efficiency: z.number().nullable(),
  requests: z.number().int(),
  responses: z.number().int(),
  joined_at: timestamp,
  retained: z.boolean(),
});

export const councilTermDetailSchema = councilTermSchema.extend({ members: z.array(councilTermMemberSchema) }) satisfies z.ZodType<
  Awaited<ReturnType<typeof getTermDetail>>
>;

export const councilTermPageSchema = z.object({
  terms: z.array(councilTermSchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listTerms>>>;

// ---------------------------------------------------------------------------------------------
// Sessions

export const councilSessionSummarySchema = z.object({
  session_id: z.string(),
  proposal_id: z.string(),
  title: z.string(),
  kind: z.enum(PROPOSAL_KINDS),
  phase,
  outcome: outcome.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});

export const councilSessionPageSchema = z.object({
  sessions: z.array(councilSessionSummarySchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listSessions>>>;

/** `GET /v1/council`: the active term (null when none), its members and the 20 newest sessions. */
export const councilOverviewSchema = z.object({
  term: councilTermSchema.nullable(),
  members: z.array(councilTermMemberSchema),
  sessions: z.array(councilSessionSummarySchema),
});

export const councilDialogSchema = z.object({
  id: z.string(),
  seq: z.number().int(),
  node_id: z.string(),
  role: z.enum(["member", "devils_advocate", "proposer", "community"]),
  phase,
  dialog_type: z.enum(DIALOG_TYPES),
  content: z.string().nullable(),
  reply_to: z.string().nullable(),
  amendment_type: z.enum(AMENDMENT_TYPES).nullable(),
  amendment_target: z.string().nullable(),
  amendment_content: z.string().nullable(),
  created_at: timestamp,
}) satisfies z.ZodType<DialogRecord>;

const proposalText = z.object({
  title: z.string(),
  body: z.string(),
  project: z.object({ name: z.string(), summary: z.string(), repo_name: z.string().optional() }).optional(),
});

const tallySchema = z.object({ approve: z.number(), reject: z.number(), revise: z.number(), total: z.number(), votes: z.number().int() });

const ethicsSchema = z.object({
  rules: z.array(z.object({ rule: z.string(), passed: z.boolean(), detail: z.string().optional() })),
  model: z.object({
    status: z.enum(["off", "not_needed", "pending", "passed", "revise", "unavailable"]),
    job_id: z.string().optional(),
    reason: z.string().optional(),
  }),
  revised_because: z.string().optional(),
});

const stageSchema = z.object({
  status: z.enum(["not_reached", "pending", "done", "failed"]),
  on_model: z.boolean(),
  runtime: z.string().optional(),
  fell_back_because: z.enum(MODEL_WORK_REASONS).optional(),
  wanted_runtime: z.string().optional(),
  detail: z.string().optional(),
});

const deadline = timestamp.optional();

export const councilSessionDetailSchema = z.object({
  session_id: z.string(),
  proposal_id: z.string(),
  term_id: z.string().nullable(),
  kind: z.enum(PROPOSAL_KINDS),
  proposal: proposalText,
  project_id: z.string().optional(),
  phase,
  phase_started_at: timestamp,
  created_at: timestamp,
  proposer_id: z.string(),
  /** The proposer first, then every seat (replaced members included). */
  members: z.array(
    z.union([
      z.object({ node_id: z.string(), role: z.literal("proposer") }),
      z.object({
        node_id: z.string(),
        role: z.enum(["member", "devils_advocate"]),
        source: z.enum(["term", "pool", "replacement"]),
        responded_at: timestamp.optional(),
        replaced_by: z.string().optional(),
        replaced_at: timestamp.optional(),
        replaces: z.string().optional(),
      }),
    ]),
  ),
  skipped_members: z.array(
    z.object({
      node_id: z.string(),
      reason: z.enum(["suspended", "reputation", "model_tier", "no_recent_heartbeat", "cooling_down", "excluded"]),
    }),
  ),
  devils_advocate: z.string().nullable(),
  seconded: z
    .object({
      by: z.string().nullable(),
      at: timestamp,
      auto: z.boolean(),
      reason: z.enum(["current_member", "reputation", "seconded"]),
    })
    .nullable(),
  replacement_rounds: z.number().int(),
  dialogs: z.array(councilDialogSchema),
  amendments: z.array(
    z.object({
      amendment_id: z.string(),
      by: z.string(),
      type: z.enum(AMENDMENT_TYPES),
      target: z.string(),
      content: z.string(),
      created_at: timestamp,
      support: z.array(z.string()),
      objections: z.array(z.string()),
      status: z.enum(["proposed", "accepted", "rejected"]),
    }),
  ),
  votes: z.array(
    z.object({
      node_id: z.string(),
      kind: z.enum(["member", "community"]),
      vote: z.enum(VOTES),
      weight: z.number(),
      confidence: z.number(),
      conditions: z.array(z.string()),
      reasoning: z.string().nullable(),
      proposal_hash: z.string(),
      created_at: timestamp,
    }),
  ),
  tally: tallySchema,
  proposal_hash: z.string().nullable(),
  electorate: z.array(z.object({ node_id: z.string(), kind: z.enum(["member", "community"]), weight: z.number() })),
  decision: z
    .object({
      outcome,
      tallied_outcome: outcome,
      confidence: z.number().nullable(),
      consensus: z.string(),
      synthesis_source: z.enum(["model", "template"]),
      synthesis_note: z.string().optional(),
      quality_score: z.number().nullable(),
      conditions: z.array(z.string()),
      ethics: ethicsSchema,
      tally: tallySchema,
      decided_at: timestamp,
    })
    .optional(),
  synthesis: z
    .object({
      status: z.enum(["pending", "done"]),
      job_id: z.string().nullable(),
      runtime: z.string().nullable(),
      source: z.enum(["model", "template"]).nullable(),
      note: z.string().nullable(),
    })
    .nullable(),
  model_work: z.object({
    prescreen: stageSchema,
    synthesis: stageSchema,
    ethics: stageSchema,
    decomposition: stageSchema.optional(),
  }),
  veto: z
    .object({
      by: z.string(),
      reason: z.string(),
      at: timestamp,
      ratify_by: timestamp,
      status: z.enum(["pending_ratification", "ratified", "lapsed"]),
      phase_before: phase,
      ratified_by: z.string().optional(),
      ratified_at: timestamp.optional(),
      lapsed_at: timestamp.optional(),
    })
    .optional(),
  end_reason: z.string().optional(),
  deadlines: z.object({
    seconding: deadline,
    diverge: deadline,
    challenge: deadline,
    voting: deadline,
    no_response: deadline,
    synthesis: deadline,
    ethics: deadline,
  }),
  version: z.number().int(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof sessionDetail>>>;

export const councilCheckSchema = z.object({ session_id: z.string(), phase, changed: z.boolean() });

// ---------------------------------------------------------------------------------------------
// Proposals

export const councilProposalSchema = z.object({
  proposal_id: z.string(),
  node_id: z.string(),
  title: z.string(),
  body: z.string(),
  kind: z.enum(PROPOSAL_KINDS),
  project: z.object({ name: z.string(), summary: z.string(), repo_name: z.string().optional() }).optional(),
  status: z.enum(PROPOSAL_STATUSES),
  session_id: z.string().nullable(),
  prescreen: z.object({
    mode: z.enum(["off", "model"]),
    status: z.enum(["skipped", "pending", "passed", "rejected"]),
    job_id: z.string().optional(),
    runtime: z.string().optional(),
    source: z.string().optional(),
    reason: z.string().optional(),
    decided_at: timestamp.optional(),
    fell_back_because: z.string().optional(),
    wanted_runtime: z.string().optional(),
    /** Set in the row (not in `PrescreenRecord`) when the submitter got a 202 before the verdict. */
    answered: z.literal("202").optional(),
  }),
  rejection: z.object({ reason: z.string(), detail: z.string().optional() }).optional(),
  created_at: timestamp,
  updated_at: timestamp,
}) satisfies z.ZodType<ReturnType<typeof proposalView>>;

/** `POST /v1/council/proposals` 201: the session is open (or the proposal was answered after its prescreen). */
export const councilProposalCreatedSchema = z.object({
  proposal_id: z.string(),
  session_id: z.string().nullable(),
  status: z.enum(PROPOSAL_STATUSES),
});

/** 202: the prescreen gave no verdict within `prescreen_wait_ms`; it lands later. */
export const councilProposalPrescreeningSchema = z.object({
  proposal_id: z.string(),
  session_id: z.null(),
  status: z.literal("prescreening"),
});

// Keep the two answers in step with `submitProposal`'s result.
type Answer<S extends SubmitResult["status"]> = Omit<Extract<SubmitResult, { status: S }>, "status" | "proposal_status"> & {
  status: Extract<SubmitResult, { status: S }>["proposal_status"];
};
councilProposalCreatedSchema satisfies z.ZodType<Answer<201>>;
councilProposalPrescreeningSchema satisfies z.ZodType<Answer<202>>;

// ---------------------------------------------------------------------------------------------
// Governance principles

const principleSchema = z.object({
  principle_id: z.string(),
  statement: z.string(),
  source_session_id: z.string(),
  confidence: z.number(),
  status: z.enum(["active", "revoked"]),
  created_at: timestamp,
  revoked_at: timestamp.optional(),
  /** With `q`: how well the principle matches it (0 to 1, three decimals). */
  match: z.number().optional(),
});

export const principlesSchema = z.object({
  principles: z.array(principleSchema),
}) satisfies z.ZodType<{ principles: Awaited<ReturnType<typeof queryPrinciples>> }>;

export const principleCheckSchema = z.object({
  max_overlap: z.number(),
  overlaps: z.array(z.object({ principle_id: z.string(), statement: z.string(), overlap: z.number() })),
}) satisfies z.ZodType<Awaited<ReturnType<typeof checkAgainstPrinciples>>>;
