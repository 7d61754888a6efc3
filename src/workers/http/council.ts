import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { requireAuth, requireAuthInWrite } from "../middleware/require-auth";
import { AppError } from "../../lib/errors";
import { prose } from "../../lib/validation";
import { validate } from "../middleware/validate";
import { readCouncilConfig } from "../../council/config";
import { checkSession, postDialog, postDirectDialog, ratifyVeto, v1DialogBody, vetoSession } from "../../council/dialog";
import { getProposal, proposalInput, submitProposal } from "../../council/proposals";
import { cryptoRandom } from "../../council/random";
import { PHASES } from "../../council/session";
import { councilOverview, getTermDetail, listSessions, listTerms, proposalView, sessionDetail } from "../../council/views";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import {
  councilCheckSchema,
  councilDialogSchema,
  councilOverviewSchema,
  councilProposalCreatedSchema,
  councilProposalPrescreeningSchema,
  councilProposalSchema,
  councilSessionDetailSchema,
  councilSessionPageSchema,
  councilTermDetailSchema,
  councilTermPageSchema,
} from "../openapi/responses/council";

const sessionParam = z.object({ id: z.string().regex(/^delib_[0-9a-f]{16}$/, "a session id") });
const proposalParam = z.object({ id: z.string().regex(/^prop_[0-9a-f]{16}$/, "a proposal id") });
const termParam = z.object({ id: z.string().regex(/^term_[0-9a-f]{16}$/, "a term id") });
const limit = z.coerce.number().int().min(1).max(500).default(50);

function nodeOf(principal: AppEnv["Variables"]["principal"]): string {
  if (principal.kind !== "node") throw new AppError("forbidden", "Only a node takes part in the council");
  return principal.nodeId;
}

/** The council (API.md "Council"): public reads, node proposals and dialog, admin veto. */
export const councilRoutes = new Hono<AppEnv>()
  .get(
    "/",
    describe({ summary: "The council: its active term, the members and the newest sessions", responses: { 200: councilOverviewSchema } }),
    async (c) => c.json(await councilOverview(getDb(c.env.DB))),
  )
  .get(
    "/terms",
    describe({ summary: "List council terms, newest first", responses: { 200: councilTermPageSchema } }),
    validate("query", z.object({ limit, cursor: z.string().regex(/^\d+$/).optional() })),
    async (c) => c.json(await listTerms(getDb(c.env.DB), c.req.valid("query"))),
  )
  .get(
    "/terms/:id",
    describe({ summary: "Read one council term with its members", responses: { 200: councilTermDetailSchema }, errors: ["not_found"] }),
    validate("param", termParam),
    async (c) => c.json(await getTermDetail(getDb(c.env.DB), c.req.valid("param").id)),
  )
  .get(
    "/sessions",
    describe({ summary: "List deliberation sessions, newest first", responses: { 200: councilSessionPageSchema } }),
    validate("query", z.object({ limit, cursor: z.string().max(100).optional(), phase: z.enum(PHASES).optional() })),
    async (c) => c.json(await listSessions(getDb(c.env.DB), c.req.valid("query"))),
  )
  .get(
    "/sessions/:id",
    describe({
      summary: "Read a session's full public trail (members, dialogs, ballots, decision, veto)",
      responses: { 200: councilSessionDetailSchema },
      errors: ["not_found"],
    }),
    validate("param", sessionParam),
    async (c) => c.json(await sessionDetail(getDb(c.env.DB), c.req.valid("param").id)),
  )
  .get(
    "/proposals/:id",
    describe({ summary: "Read one proposal", responses: { 200: councilProposalSchema }, errors: ["not_found"] }),
    validate("param", proposalParam),
    async (c) => c.json(proposalView(await getProposal(getDb(c.env.DB), c.req.valid("param").id))),
  )
  .post(
    "/proposals",
    describe({
      summary: "Submit a proposal, as a node",
      description:
        "The screening gates in order: eligibility, rate, content quality, static security scan, then the model prescreen when it is on. 201 when the session is open (or the prescreen answered in time), 202 when the prescreen's verdict lands later.",
      responses: { 201: councilProposalCreatedSchema, 202: councilProposalPrescreeningSchema },
      errors: ["forbidden", "not_eligible", "rate_limited", "validation_failed", "security_scan", "prescreen_rejected", "unavailable"],
    }),
    requireAuth({ node: true }),
    validate("json", proposalInput),
    async (c) => {
      const db = getDb(c.env.DB);
      const result = await submitProposal(c.env, db, nodeOf(c.var.principal), c.req.valid("json"), c.var.clock.now(), {
        config: await readCouncilConfig(db, c.var.clock.now()),
        random: cryptoRandom,
      });
      return c.json({ proposal_id: result.proposal_id, session_id: result.session_id, status: result.proposal_status }, result.status);
    },
  )
  // The hot path (issue 8's benchmark): a plain contribution with a node token is one D1 statement
  // batch that also authenticates (council/direct-dialog.ts); anything else authenticates as usual
  // and goes through the session's object.
  .post(
    "/sessions/:id/dialog",
    describe({
      summary: "Post a dialog (a second, a contribution, an amendment or a ballot) to a session, as a node",
      responses: { 201: councilDialogSchema },
      errors: [
        "forbidden",
        "not_found",
        "wrong_phase",
        "not_eligible",
        "rate_limited",
        "validation_failed",
        "stale_proposal",
        "already_voted",
      ],
    }),
    requireAuthInWrite({ node: true }),
    validate("param", sessionParam),
    validate("json", v1DialogBody),
    async (c) => {
      const id = c.req.valid("param").id;
      const body = c.req.valid("json");
      const now = c.var.clock.now();
      const defer = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
      const presented = c.var.presented;
      if (presented) {
        const dialog = await postDirectDialog(c.env, id, presented, body, now, { defer });
        if (dialog) return c.json(dialog, 201);
        await c.var.authenticate!();
      }
      const dialog = await postDialog(c.env, id, nodeOf(c.var.principal), body, now, { defer, direct: !presented });
      return c.json(dialog, 201);
    },
  )
  .post(
    "/sessions/:id/check",
    describe({ summary: "Run a session's deadline and progress check now", responses: { 200: councilCheckSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "manager" }),
    validate("param", sessionParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const out = await checkSession(c.env, id, c.var.clock.now());
      return c.json({ session_id: id, phase: out.phase, changed: out.changed });
    },
  )
  .post(
    "/sessions/:id/veto",
    describe({
      summary: "Veto a session, as a named admin (a different admin ratifies it)",
      responses: { 200: councilSessionDetailSchema },
      errors: ["forbidden", "not_found", "wrong_phase", "veto_lapsed", "project_active"],
    }),
    requireAuth({ operator: "admin" }),
    validate("param", sessionParam),
    validate("json", z.strictObject({ reason: prose(2_000) })),
    async (c) => {
      const id = c.req.valid("param").id;
      await vetoSession(c.env, id, c.var.principal.id, c.req.valid("json").reason, c.var.clock.now());
      return c.json(await sessionDetail(getDb(c.env.DB), id));
    },
  )
  .post(
    "/sessions/:id/veto/ratify",
    describe({
      summary: "Ratify a pending veto, as a different named admin",
      responses: { 200: councilSessionDetailSchema },
      errors: ["forbidden", "not_found", "wrong_phase"],
    }),
    requireAuth({ operator: "admin" }),
    validate("param", sessionParam),
    async (c) => {
      const id = c.req.valid("param").id;
      await ratifyVeto(c.env, id, c.var.principal.id, c.var.clock.now());
      return c.json(await sessionDetail(getDb(c.env.DB), id));
    },
  );
