import { and, asc, eq, isNull, lt } from "drizzle-orm";
import { getDb } from "../db/client";
import { conversations } from "../db/schema";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { closeConversation } from "./close";
import { conversationsConfig } from "./config";

/**
 * The `conversations` tick: an open conversation with no turn for `idle_minutes` is closed (and its
 * prediction runs) as if its user had closed it. One whose reply is still in flight waits for it,
 * unless the reply has been pending longer than the reply timeout and the idle time together (a
 * lost job): then it closes too. Bounded per tick; the rest close on the next.
 */
export async function conversationsTick(env: Env, now: Date, limit = 50) {
  const db = getDb(env.DB);
  const cfg = await readSection(db, conversationsConfig);
  const idleBefore = new Date(now.getTime() - cfg.idle_minutes * 60_000).toISOString();
  const stuckBefore = new Date(now.getTime() - cfg.idle_minutes * 60_000 - cfg.reply_timeout_ms).toISOString();
  const quiet = await db
    .select({ id: conversations.id })
    .from(conversations)
    .where(and(eq(conversations.status, "open"), isNull(conversations.pendingJobId), lt(conversations.lastActivityAt, idleBefore)))
    .orderBy(asc(conversations.lastActivityAt))
    .limit(limit)
    .all();
  const stuck = await db
    .select({ id: conversations.id })
    .from(conversations)
    .where(and(eq(conversations.status, "open"), lt(conversations.lastActivityAt, stuckBefore)))
    .orderBy(asc(conversations.lastActivityAt))
    .limit(limit)
    .all();
  const ids = [...new Set([...quiet, ...stuck].map((r) => r.id))];
  let closed = 0;
  for (const id of ids) {
    await closeConversation(env, id, "idle", "conversations_tick", now);
    closed++;
  }
  return { closed_idle: closed };
}
