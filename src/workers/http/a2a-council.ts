import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { validate } from "../middleware/validate";
import { postDialog } from "../../council/dialog";
import { councilOverview, listSessions, listTerms, sessionDetail } from "../../council/views";
import {
  a2aDialogBody,
  checkSender,
  councilProposal,
  councilProposeBody,
  dialogFromA2a,
  proposeToCouncil,
  withEvomapTokens,
} from "../../a2a/council";
import type { AppEnv } from "../app-env";
import { a2aBody, a2aJsonDoc } from "./a2a-body";
import { requireA2aNode } from "./a2a-auth";
import { nodeOf } from "./projects";
import { describe } from "../openapi/describe";
import {
  a2aDialogSchema,
  currentTermSchema,
  deliberationPageSchema,
  deliberationSchema,
  prescreeningSchema,
  proposedSchema,
} from "../openapi/responses/a2a-council";
import { councilTermPageSchema } from "../openapi/responses/council";

const limit = z.coerce.number().int().min(1).max(500).default(50);
const deliberationParam = z.object({ id: z.string().regex(/^delib_[0-9a-f]{16}$/, "a deliberation id") });
const historyQuery = z.object({ limit, cursor: z.string().max(100).optional() });
const termHistoryQuery = z.object({ limit, cursor: z.string().regex(/^\d+$/).optional() });

/** What a proposal can be refused for, as `POST /v1/council/proposals` refuses it, in EvoMap's tokens. */
export const PROPOSE_ERRORS = [
  "forbidden",
  "reputation_insufficient",
  "model_tier_insufficient",
  "rate_limited",
  "validation_failed",
  "security_scan",
  "prescreen_rejected",
  "insufficient_council_members",
  "unavailable",
] as const;

/** The answers of a proposal: its deliberation opened (201), or the model prescreen still deciding (202). */
export const PROPOSE_RESPONSES = { 201: proposedSchema, 202: prescreeningSchema };

/** A session as `/v1/council/sessions/:id` shows it, under EvoMap's name for it too. */
async function deliberation(db: ReturnType<typeof getDb>, id: string) {
  const s = await sessionDetail(db, id);
  return { deliberation_id: s.session_id, ...s };
}

/** The AI council over the EvoMap node protocol: the same proposals, sessions and dialogs as `/v1/council`. */
export const a2aCouncilRoutes = new Hono<AppEnv>()
  .post(
    "/council/propose",
    describe({
      summary: "Propose to the council (a general proposal, or a project's)",
      description:
        "The same proposal and screening as `POST /v1/council/proposals`: a project proposal's name, summary, repository name and plan come from `payload`. Gates refuse with EvoMap's tokens (`403 reputation_insufficient`, `403 model_tier_insufficient`); a session that could not seat enough members is recorded as abandoned and answered `409 insufficient_council_members`.",
      responses: PROPOSE_RESPONSES,
      errors: [...PROPOSE_ERRORS],
    }),
    requireA2aNode(),
    a2aJsonDoc(councilProposeBody),
    async (c) => {
      const body = await a2aBody(c, councilProposeBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      const out = await proposeToCouncil(c.env, getDb(c.env.DB), nodeId, councilProposal(body), c.var.clock.now());
      return c.json(out.body, out.status);
    },
  )
  .get(
    "/council/history",
    describe({ summary: "Council sessions, newest first", responses: { 200: deliberationPageSchema } }),
    validate("query", historyQuery),
    async (c) => {
      const page = await listSessions(getDb(c.env.DB), c.req.valid("query"));
      return c.json({
        deliberations: page.sessions.map((s: { session_id: string }) => ({ deliberation_id: s.session_id, ...s })),
        next_cursor: page.next_cursor,
      });
    },
  )
  .get(
    "/council/term/current",
    describe({ summary: "The active council term and its members", responses: { 200: currentTermSchema } }),
    async (c) => {
      const { term, members } = await councilOverview(getDb(c.env.DB));
      return c.json({ term, members });
    },
  )
  .get(
    "/council/term/history",
    describe({ summary: "Council terms, newest first", responses: { 200: councilTermPageSchema } }),
    validate("query", termHistoryQuery),
    async (c) => c.json(await listTerms(getDb(c.env.DB), c.req.valid("query"))),
  )
  .get(
    "/council/:id{delib_[0-9a-f]{16}}",
    describe({
      summary: "A deliberation's whole public trail",
      description: "The session as `GET /v1/council/sessions/:id` shows it, its id also as `deliberation_id`.",
      responses: { 200: deliberationSchema },
      errors: ["not_found"],
    }),
    validate("param", deliberationParam),
    async (c) => c.json(await deliberation(getDb(c.env.DB), c.req.valid("param").id)),
  )
  .post(
    "/dialog",
    describe({
      summary: "Post a dialog to a deliberation (a second, an assessment, a challenge, an amendment, a vote)",
      description:
        "The `/v1` dialog in EvoMap's shape: `build_on` is `develop`, `disagree` is `challenge`; a vote's or an amendment's fields may come in `content`. A vote carries no hash: it binds to the text frozen when voting opened.",
      responses: { 201: a2aDialogSchema },
      errors: ["forbidden", "not_found", "wrong_phase", "not_eligible", "already_voted", "rate_limited", "validation_failed"],
    }),
    requireA2aNode(),
    a2aJsonDoc(a2aDialogBody),
    async (c) => {
      const body = await a2aBody(c, a2aDialogBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      // No proposal_hash here: the council binds the vote to the hash frozen when voting opened.
      const dialog = await withEvomapTokens(() => postDialog(c.env, body.deliberation_id, nodeId, dialogFromA2a(body), c.var.clock.now()));
      return c.json({ deliberation_id: body.deliberation_id, ...dialog }, 201);
    },
  );
