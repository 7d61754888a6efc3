import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { ingestTranscript, transcriptBody } from "../../conversations/batch";
import { closeConversation } from "../../conversations/close";
import { messageBody, sendMessage } from "../../conversations/messages";
import { listNotices } from "../../conversations/notices";
import { conversationView, listTurns, requireConversation } from "../../conversations/store";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { conversationSchema, messageAcceptedSchema, transcriptIngestedSchema } from "../openapi/responses/conversations";

const idParam = z.object({ id: z.string().regex(/^conv_[0-9a-f]{16}$/, "a conversation id") });

/** Conversations with employees (API.md "Evolution"; seed 003 §5.1). Opening one is under `/v1/employees/:id/conversations`. */
export const conversationsRoutes = new Hono<AppEnv>()
  .post(
    "/",
    describe({
      summary: "Record a transcript that happened elsewhere and run the prediction engine on it",
      responses: { 200: transcriptIngestedSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager", runner: true }),
    validate("json", transcriptBody),
    async (c) => {
      const out = await ingestTranscript(c.env, getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, c.var.clock.now());
      return c.json(out, 200);
    },
  )
  .get(
    "/:id",
    describe({
      summary: "Read a conversation: its turns and, once closed, its prediction outcome",
      responses: { 200: conversationSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const conv = await requireConversation(db, c.req.valid("param").id);
      const [turns, notices] = await Promise.all([listTurns(db, conv.id), listNotices(db, conv.id)]);
      return c.json(conversationView(conv, turns, notices));
    },
  )
  .post(
    "/:id/messages",
    describe({
      summary: "Send the user's message; the employee's reply runs as a job",
      responses: { 202: messageAcceptedSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", messageBody),
    async (c) => {
      const out = await sendMessage(
        c.env,
        getDb(c.env.DB),
        c.req.valid("param").id,
        c.req.valid("json"),
        c.var.principal.id,
        c.var.clock.now(),
      );
      return c.json(out, 202);
    },
  )
  .post(
    "/:id/close",
    describe({
      summary: "Close the conversation and run the prediction engine on it (idempotent)",
      responses: { 200: conversationSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    async (c) => {
      return c.json(await closeConversation(c.env, c.req.valid("param").id, "closed_by_request", c.var.principal.id, c.var.clock.now()));
    },
  );
