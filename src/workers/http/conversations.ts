import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { ingestTranscript, transcriptBody } from "../../conversations/batch";
import { closeConversation } from "../../conversations/close";
import { messageBody, sendMessage } from "../../conversations/messages";
import { conversationView, listTurns, requireConversation } from "../../conversations/store";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";

const idParam = z.object({ id: z.string().regex(/^conv_[0-9a-f]{16}$/, "a conversation id") });

/** Conversations with employees (API.md "Evolution"; seed 003 §5.1). Opening one is under `/v1/employees/:id/conversations`. */
export const conversationsRoutes = new Hono<AppEnv>()
  .post("/", requireAuth({ operator: "manager", runner: true }), validate("json", transcriptBody), async (c) => {
    const out = await ingestTranscript(c.env, getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, c.var.clock.now());
    return c.json(out, 200);
  })
  .get("/:id", requireAuth({ operator: "viewer" }), validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const conv = await requireConversation(db, c.req.valid("param").id);
    return c.json(conversationView(conv, await listTurns(db, conv.id)));
  })
  .post("/:id/messages", requireAuth({ operator: "manager" }), validate("param", idParam), validate("json", messageBody), async (c) => {
    const out = await sendMessage(
      c.env,
      getDb(c.env.DB),
      c.req.valid("param").id,
      c.req.valid("json"),
      c.var.principal.id,
      c.var.clock.now(),
    );
    return c.json(out, 202);
  })
  .post("/:id/close", requireAuth({ operator: "manager" }), validate("param", idParam), async (c) => {
    return c.json(await closeConversation(c.env, c.req.valid("param").id, "closed_by_request", c.var.principal.id, c.var.clock.now()));
  });
