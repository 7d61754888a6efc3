import { asc, eq, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { conversationNotices, type ConversationNoticeRow } from "../db/schema";
import { insertWhere } from "../lib/guarded-insert";

export interface GoalNotice {
  conversationId: string;
  taskId: string;
  roundId: string | null;
  /** What makes the post happen once (`round_started:<round id>`): a repeat lands nothing. */
  key: string;
  content: string;
}

/**
 * The goal loop's way into a conversation: one line, posted once per `key`, as a statement for the
 * caller's batch so it lands with the change it reports (or not at all). `landed`: post only if it holds.
 */
export function goalNoticeStatement(db: Db, notice: GoalNotice, now: Date, landed?: SQL) {
  const row = {
    key: notice.key,
    conversationId: notice.conversationId,
    kind: "goal_progress" as const,
    taskId: notice.taskId,
    roundId: notice.roundId,
    content: notice.content,
    at: now.toISOString(),
  };
  return landed
    ? insertWhere(db, conversationNotices, row, landed).onConflictDoNothing()
    : db.insert(conversationNotices).values(row).onConflictDoNothing();
}

export function listNotices(db: Db, conversationId: string): Promise<ConversationNoticeRow[]> {
  return db
    .select()
    .from(conversationNotices)
    .where(eq(conversationNotices.conversationId, conversationId))
    .orderBy(asc(conversationNotices.at), asc(conversationNotices.key))
    .all();
}

export function noticeView(n: ConversationNoticeRow) {
  return { kind: n.kind, task_id: n.taskId, ...(n.roundId ? { round_id: n.roundId } : {}), content: n.content, at: n.at };
}
