import { z } from "zod";
import type { proposeToCouncil } from "../../../a2a/council";
import { PROPOSAL_KINDS, PROPOSAL_STATUSES, TERM_STATUSES } from "../../../db/schema";
import { MODEL_WORK_REASONS } from "../../../jobs/model-work";
import { AMENDMENT_TYPES, DIALOG_TYPES, PHASES, type DialogRecord } from "../../../council/session";
import type { councilOverview, listSessions, listTerms, sessionDetail } from "../../../council/views";
import type { StageView } from "../../../council/model-work-view";
import type { Ineligibility } from "../../../council/selection";
import { VOTES } from "../../../council/tally";
import { timestamp } from "./common";

/**
 * The AI council over the EvoMap node protocol (`/a2a/council/*`, `/a2a/dialog`): `/v1/council`'s
 * sessions, terms and dialogs, a session also under EvoMap's name for it (`deliberation_id`).
 */

const phase = z.enum(PHASES);
const outcome = z.enum(["approved", "rejected", "revise"]);
const tally = z.object({ approve: z.number(), reject: z.number(), revise: z.number(), total: z.number(), votes: z.number().int() });
const INELIGIBILITIES = [
  "suspended",
  "reputation",
  "model_tier",
  "no_recent_heartbeat",
  "cooling_down",
  "excluded",
] as const satisfies readonly Ineligibility[];

/** A dialog as the session's trail records it. */
export const dialogRecordSchema = z.object({
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

/** `POST /a2a/dialog`: the dialog recorded, under its deliberation's id. */
export const a2aDialogSchema = dialogRecordSchema.extend({ deliberation_id: z.string() });

/** One stage of a session's model work: on a model or not, and why not. */
const stageView = z.object({
  status: z.enum(["not_reached", "pending", "done", "failed"]),
  on_model: z.boolean(),
  runtime: z.string().optional(),
  fell_back_because: z.enum(MODEL_WORK_REASONS).optional(),
  wanted_runtime: z.string().optional(),
  detail: z.string().optional(),
}) satisfies z.ZodType<StageView>;

const ethicsRecord = z.object({
  rules: z.array(z.object({ rule: z.string(), passed: z.boolean(), detail: z.string().optional() })),
  model: z.object({
    status: z.enum(["off", "not_needed", "pending", "passed", "revise", "unavailable"]),
    job_id: z.string().optional(),
    reason: z.string().optional(),
  }),
  revised_because: z.string().optional(),
});

const sessionDetailShape = {
  session_id: z.string(),
  proposal_id: z.string(),
  term_id: z.string().nullable(),
  kind: z.enum(PROPOSAL_KINDS),
  proposal: z.object({
    title: z.string(),
    body: z.string(),
    project: z.object({ name: z.string(), summary: z.string(), repo_name: z.string().optional() }).optional(),
  }),
  project_id: z.string().optional(),
  phase,
  phase_started_at: timestamp,
  created_at: timestamp,
  proposer_id: z.string(),
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
  skipped_members: z.array(z.object({ node_id: z.string(), reason: z.enum(INELIGIBILITIES) })),
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
  dialogs: z.array(dialogRecordSchema),
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
  tally,
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
      ethics: ethicsRecord,
      tally,
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
  model_work: z.object({ prescreen: stageView, synthesis: stageView, ethics: stageView, decomposition: stageView.optional() }),
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
    seconding: timestamp.optional(),
    diverge: timestamp.optional(),
    challenge: timestamp.optional(),
    voting: timestamp.optional(),
    no_response: timestamp.optional(),
    synthesis: timestamp.optional(),
    ethics: timestamp.optional(),
  }),
  version: z.number().int(),
};

const sessionDetailSchema = z.object(sessionDetailShape) satisfies z.ZodType<Awaited<ReturnType<typeof sessionDetail>>>;

/** `GET /a2a/council/:id`: the session's whole public trail, `deliberation_id` being its id. */
export const deliberationSchema = sessionDetailSchema.extend({ deliberation_id: z.string() });

/** `GET /a2a/council/history`: sessions newest first, each under EvoMap's name for it too. */
export const deliberationPageSchema = z.object({
  deliberations: z.array(
    z.object({
      deliberation_id: z.string(),
      session_id: z.string(),
      proposal_id: z.string(),
      title: z.string(),
      kind: z.enum(PROPOSAL_KINDS),
      phase,
      outcome: outcome.nullable(),
      created_at: timestamp,
      updated_at: timestamp,
    }),
  ),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<{
  deliberations: (Awaited<ReturnType<typeof listSessions>>["sessions"][number] & { deliberation_id: string })[];
  next_cursor: string | null;
}>;

const termViewShape = {
  term_id: z.string(),
  number: z.number().int(),
  status: z.enum(TERM_STATUSES),
  started_at: timestamp,
  ends_at: timestamp,
  session_count: z.number().int(),
  last_session_at: timestamp.nullable(),
  efficiency_samples: z.array(z.number()),
  dissolved_at: timestamp.optional(),
  dissolution_reasons: z.array(z.string()).nullable().optional(),
};
const termViewSchema = z.object(termViewShape);

/** `GET /a2a/council/term/history`: terms newest first. */
export const termPageSchema = z.object({
  terms: z.array(termViewSchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listTerms>>>;

/** `GET /a2a/council/term/current`: the active term and its members (none between terms). */
export const currentTermSchema = z.object({
  term: termViewSchema.nullable(),
  members: z.array(
    z.object({
      node_id: z.string(),
      efficiency: z.number().nullable().describe("the share of requests to respond it answered; null until asked"),
      requests: z.number().int(),
      responses: z.number().int(),
      joined_at: timestamp,
      retained: z.boolean(),
    }),
  ),
}) satisfies z.ZodType<Pick<Awaited<ReturnType<typeof councilOverview>>, "term" | "members">>;

type Proposed = Awaited<ReturnType<typeof proposeToCouncil>>;

/** `201`: the proposal passed screening and its deliberation opened with its council seated. */
export const proposedSchema = z.object({
  deliberation_id: z.string(),
  proposal_id: z.string(),
  project_id: z.string().optional(),
  status: phase.exclude(["abandoned"]).describe("the deliberation's phase"),
  round: z.literal(1),
  council_members: z.array(z.string()),
  proposal_type: z.enum(["project_proposal", "general"]),
}) satisfies z.ZodType<Extract<Proposed, { status: 201 }>["body"]>;

/** `202`: the proposal waits for the model prescreen's verdict (a pending event tells the proposer). */
export const prescreeningSchema = z.object({
  deliberation_id: z.null(),
  proposal_id: z.string(),
  status: z.enum(PROPOSAL_STATUSES).describe("the proposal's status"),
  council_members: z.array(z.never()).describe("none yet: the council is seated when the prescreen passes"),
}) satisfies z.ZodType<Extract<Proposed, { status: 202 }>["body"]>;
