import { asc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { conversations, conversationTurns, type ConversationNoticeRow, type ConversationRow, type ConversationTurnRow } from "../db/schema";
import { notFound } from "../lib/errors";
import { noticeView } from "./notices";

export function findConversation(db: Db, id: string): Promise<ConversationRow | undefined> {
  return db.select().from(conversations).where(eq(conversations.id, id)).get();
}

export async function requireConversation(db: Db, id: string): Promise<ConversationRow> {
  const row = await findConversation(db, id);
  if (!row) throw notFound(`conversation ${id}`);
  return row;
}

export function listTurns(db: Db, conversationId: string): Promise<ConversationTurnRow[]> {
  return db
    .select()
    .from(conversationTurns)
    .where(eq(conversationTurns.conversationId, conversationId))
    .orderBy(asc(conversationTurns.seq))
    .all();
}

export function turnView(t: ConversationTurnRow) {
  return {
    seq: t.seq,
    role: t.role,
    content: t.content,
    status: t.status,
    at: t.at,
    ...(t.feedback ? { feedback: t.feedback } : {}),
    ...(t.jobId ? { job_id: t.jobId } : {}),
    ...(t.error ? { error: t.error } : {}),
  };
}

/** `GET /v1/conversations/:id`: the turns, the status, and after close what the prediction engine made of it. */
export function conversationView(c: ConversationRow, turns: readonly ConversationTurnRow[], notices?: readonly ConversationNoticeRow[]) {
  return {
    conversation_id: c.id,
    employee_id: c.employeeId,
    user_id: c.userId,
    source: c.source,
    status: c.status,
    reply_pending: c.pendingJobId !== null,
    created_at: c.createdAt,
    last_activity_at: c.lastActivityAt,
    ...(c.closedAt ? { closed_at: c.closedAt, close_reason: c.closeReason } : {}),
    turns: turns.map(turnView),
    // Lines the goal loop posted here (a team round's progress estimate), apart from the turns; GET reads them.
    ...(notices ? { notices: notices.map(noticeView) } : {}),
    // After the close: what the prediction engine expected, how far off it was, where it routed.
    ...(c.outcome ? { prediction: c.outcome.prediction, error: c.outcome.error, action: c.outcome.action } : {}),
  };
}
