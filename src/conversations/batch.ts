import * as z from "zod";
import type { Db } from "../db/client";
import { conversations, conversationTurns } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { employeeId } from "../tasks/employees";
import { notFound } from "../lib/errors";
import { findEmployee } from "../tasks/employees";
import { closeConversation } from "./close";
import { feedback, MESSAGE_MAX_BYTES } from "./messages";
import { jsonStringBytes } from "../jobs/limits";

/**
 * `POST /v1/conversations` (API.md): a transcript that happened elsewhere (another channel, an
 * integration) goes through the same prediction engine as a live conversation. It is recorded as a
 * closed conversation (`source: batch`) so its prediction has the same trail.
 */
export const transcriptBody = z.strictObject({
  agent_id: employeeId,
  user_id: z.string().trim().min(1).max(200),
  messages: z
    .array(
      z.strictObject({
        role: z.enum(["user", "assistant"]),
        content: z
          .string()
          .min(1)
          .refine((c) => c.isWellFormed(), "must not contain lone surrogates")
          .refine((c) => jsonStringBytes(c) <= MESSAGE_MAX_BYTES, `must be at most ${MESSAGE_MAX_BYTES} bytes`),
        at: z.iso.datetime({ offset: true }),
      }),
    )
    .min(1)
    .max(200),
  feedback: feedback.optional(),
});
export type TranscriptBody = z.infer<typeof transcriptBody>;

export async function ingestTranscript(env: Env, db: Db, body: TranscriptBody, actor: string, now: Date) {
  if (!(await findEmployee(db, body.agent_id))) throw notFound(`employee ${body.agent_id}`);
  const id = newId("conv");
  const at = now.toISOString();
  const lastUser = body.messages.map((m) => m.role).lastIndexOf("user");
  await db.batch([
    db.insert(conversations).values({
      id,
      employeeId: body.agent_id,
      userId: body.user_id,
      source: "batch",
      status: "open",
      openedBy: actor,
      turnCount: body.messages.length,
      createdAt: at,
      lastActivityAt: at,
    }),
    db.insert(conversationTurns).values(
      body.messages.map((m, i) => ({
        conversationId: id,
        seq: i + 1,
        role: m.role,
        content: m.content,
        status: "ok" as const,
        // The transcript's feedback is the user's reaction: it rides on the last user turn.
        ...(body.feedback && i === lastUser ? { feedback: body.feedback } : {}),
        at: new Date(m.at).toISOString(),
      })),
    ),
    appendEvent(
      db,
      {
        type: "conversation.opened",
        subject: id,
        payload: { conversation_id: id, employee_id: body.agent_id, user_id: body.user_id, source: "batch", by: actor },
      },
      now,
    ),
  ]);
  const closed = await closeConversation(env, id, "batch", actor, now);
  return { conversation_id: id, prediction: closed.prediction, error: closed.error, action: closed.action };
}
