import * as z from "zod";
import type { proposeToCouncil } from "../../../a2a/council";
import { PROPOSAL_STATUSES } from "../../../db/schema";
import { PHASES } from "../../../council/session";
import type { councilOverview, listSessions } from "../../../council/views";
import {
  councilDialogSchema,
  councilSessionDetailSchema,
  councilSessionSummarySchema,
  councilTermMemberSchema,
  councilTermSchema,
} from "./council";

/**
 * The AI council over the EvoMap node protocol (`/a2a/council/*`, `/a2a/dialog`): `/v1/council`'s
 * sessions, terms and dialogs (council.ts), a session also under EvoMap's name for it (`deliberation_id`).
 */

const phase = z.enum(PHASES);

/** `POST /a2a/dialog`: the dialog recorded, under its deliberation's id. */
export const a2aDialogSchema = councilDialogSchema.extend({ deliberation_id: z.string() });

/** `GET /a2a/council/:id`: the session's whole public trail, `deliberation_id` being its id. */
export const deliberationSchema = councilSessionDetailSchema.extend({ deliberation_id: z.string() });

/** `GET /a2a/council/history`: sessions newest first, each under EvoMap's name for it too. */
export const deliberationPageSchema = z.object({
  deliberations: z.array(councilSessionSummarySchema.extend({ deliberation_id: z.string() })),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<{
  deliberations: (Awaited<ReturnType<typeof listSessions>>["sessions"][number] & { deliberation_id: string })[];
  next_cursor: string | null;
}>;

/** `GET /a2a/council/term/current`: the active term and its members (none between terms). */
export const currentTermSchema = z.object({
  term: councilTermSchema.nullable(),
  members: z.array(councilTermMemberSchema),
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
