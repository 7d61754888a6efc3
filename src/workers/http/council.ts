import { Hono } from "hono";
import { z } from "zod";
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
  .get("/", async (c) => c.json(await councilOverview(getDb(c.env.DB))))
  .get("/terms", validate("query", z.object({ limit, cursor: z.string().regex(/^\d+$/).optional() })), async (c) =>
    c.json(await listTerms(getDb(c.env.DB), c.req.valid("query"))),
  )
  .get("/terms/:id", validate("param", termParam), async (c) => c.json(await getTermDetail(getDb(c.env.DB), c.req.valid("param").id)))
  .get(
    "/sessions",
    validate("query", z.object({ limit, cursor: z.string().max(100).optional(), phase: z.enum(PHASES).optional() })),
    async (c) => c.json(await listSessions(getDb(c.env.DB), c.req.valid("query"))),
  )
  .get("/sessions/:id", validate("param", sessionParam), async (c) => c.json(await sessionDetail(getDb(c.env.DB), c.req.valid("param").id)))
  .get("/proposals/:id", validate("param", proposalParam), async (c) =>
    c.json(proposalView(await getProposal(getDb(c.env.DB), c.req.valid("param").id))),
  )
  .post("/proposals", requireAuth({ node: true }), validate("json", proposalInput), async (c) => {
    const db = getDb(c.env.DB);
    const result = await submitProposal(c.env, db, nodeOf(c.var.principal), c.req.valid("json"), c.var.clock.now(), {
      config: await readCouncilConfig(db, c.var.clock.now()),
      random: cryptoRandom,
    });
    return c.json({ proposal_id: result.proposal_id, session_id: result.session_id, status: result.proposal_status }, result.status);
  })
  // The hot path (issue 8's benchmark): a plain contribution with a node token is one D1 statement
  // batch that also authenticates (council/direct-dialog.ts); anything else authenticates as usual
  // and goes through the session's object.
  .post(
    "/sessions/:id/dialog",
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
  .post("/sessions/:id/check", requireAuth({ operator: "manager" }), validate("param", sessionParam), async (c) => {
    const id = c.req.valid("param").id;
    const out = await checkSession(c.env, id, c.var.clock.now());
    return c.json({ session_id: id, phase: out.phase, changed: out.changed });
  })
  .post(
    "/sessions/:id/veto",
    requireAuth({ operator: "admin" }),
    validate("param", sessionParam),
    validate("json", z.strictObject({ reason: prose(2_000) })),
    async (c) => {
      const id = c.req.valid("param").id;
      await vetoSession(c.env, id, c.var.principal.id, c.req.valid("json").reason, c.var.clock.now());
      return c.json(await sessionDetail(getDb(c.env.DB), id));
    },
  )
  .post("/sessions/:id/veto/ratify", requireAuth({ operator: "admin" }), validate("param", sessionParam), async (c) => {
    const id = c.req.valid("param").id;
    await ratifyVeto(c.env, id, c.var.principal.id, c.var.clock.now());
    return c.json(await sessionDetail(getDb(c.env.DB), id));
  });
