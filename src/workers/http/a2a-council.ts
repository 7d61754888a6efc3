import { Hono } from "hono";
import { z } from "zod";
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
import { a2aBody } from "./a2a-body";
import { requireA2aNode } from "./a2a-auth";
import { nodeOf } from "./projects";

const limit = z.coerce.number().int().min(1).max(500).default(50);
const deliberationParam = z.object({ id: z.string().regex(/^delib_[0-9a-f]{16}$/, "a deliberation id") });

/** A session as `/v1/council/sessions/:id` shows it, under EvoMap's name for it too. */
async function deliberation(db: ReturnType<typeof getDb>, id: string) {
  const s = await sessionDetail(db, id);
  return { deliberation_id: s.session_id, ...s };
}

/** The AI council over the EvoMap node protocol: the same proposals, sessions and dialogs as `/v1/council`. */
export const a2aCouncilRoutes = new Hono<AppEnv>()
  .post("/council/propose", requireA2aNode(), async (c) => {
    const body = await a2aBody(c, councilProposeBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const out = await proposeToCouncil(c.env, getDb(c.env.DB), nodeId, councilProposal(body), c.var.clock.now());
    return c.json(out.body, out.status);
  })
  .get("/council/history", validate("query", z.object({ limit, cursor: z.string().max(100).optional() })), async (c) => {
    const page = await listSessions(getDb(c.env.DB), c.req.valid("query"));
    return c.json({
      deliberations: page.sessions.map((s: { session_id: string }) => ({ deliberation_id: s.session_id, ...s })),
      next_cursor: page.next_cursor,
    });
  })
  .get("/council/term/current", async (c) => {
    const { term, members } = await councilOverview(getDb(c.env.DB));
    return c.json({ term, members });
  })
  .get("/council/term/history", validate("query", z.object({ limit, cursor: z.string().regex(/^\d+$/).optional() })), async (c) =>
    c.json(await listTerms(getDb(c.env.DB), c.req.valid("query"))),
  )
  .get("/council/:id{delib_[0-9a-f]{16}}", validate("param", deliberationParam), async (c) =>
    c.json(await deliberation(getDb(c.env.DB), c.req.valid("param").id)),
  )
  .post("/dialog", requireA2aNode(), async (c) => {
    const body = await a2aBody(c, a2aDialogBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    // No proposal_hash here: the council binds the vote to the hash frozen when voting opened.
    const dialog = await withEvomapTokens(() => postDialog(c.env, body.deliberation_id, nodeId, dialogFromA2a(body), c.var.clock.now()));
    return c.json({ deliberation_id: body.deliberation_id, ...dialog }, 201);
  });
