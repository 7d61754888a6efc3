import { and, asc, desc, eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { conversations, evalRuns, events, swarmTasks, tasks } from "../db/schema";
import type { EventView } from "../lib/events";

/*
 * The console's newest-first lists that no JSON route serves yet (the API's feed is oldest-first for
 * tailing; it has no task, conversation or eval run list). Reads only, bounded, each one query.
 */

/** The newest events, newest first, optionally of one type prefix (the activity feed). */
export async function recentEvents(db: Db, q: { typePrefix?: string; limit: number }): Promise<EventView[]> {
  const rows = await db
    .select()
    .from(events)
    .where(q.typePrefix ? sql`substr(${events.type}, 1, ${q.typePrefix.length}) = ${q.typePrefix}` : undefined)
    .orderBy(desc(events.id))
    .limit(q.limit)
    .all();
  return rows.map((r) => ({ id: String(r.id), type: r.type, subject: r.subject, payload: r.payload, created_at: r.createdAt }));
}

/** The newest tasks' rows (the router shows each as `GET /v1/tasks/:id` does, through `taskView`). */
export async function recentTasks(db: Db, q: { limit: number; assignedTo?: string }) {
  return db
    .select()
    .from(tasks)
    .where(q.assignedTo ? eq(tasks.assignedTo, q.assignedTo) : undefined)
    .orderBy(desc(tasks.createdAt), desc(tasks.id))
    .limit(q.limit)
    .all();
}

/** An employee's newest conversations. */
export async function employeeConversations(db: Db, employeeId: string, limit: number) {
  return db
    .select({
      conversation_id: conversations.id,
      user_id: conversations.userId,
      status: conversations.status,
      source: conversations.source,
      created_at: conversations.createdAt,
      last_activity_at: conversations.lastActivityAt,
    })
    .from(conversations)
    .where(and(eq(conversations.employeeId, employeeId)))
    .orderBy(desc(conversations.createdAt))
    .limit(limit)
    .all();
}

/** The newest capability-matrix measurements. */
export async function recentEvalRuns(db: Db, limit: number) {
  return db
    .select({ run_id: evalRuns.id, status: evalRuns.status, created_at: evalRuns.createdAt })
    .from(evalRuns)
    .orderBy(desc(evalRuns.createdAt))
    .limit(limit)
    .all();
}

/** Completed swarm tasks nobody verified yet, oldest completion first (the projects page's queue). */
export async function unverifiedSwarmTasks(db: Db, limit: number) {
  return db
    .select()
    .from(swarmTasks)
    .where(and(eq(swarmTasks.status, "completed"), isNull(swarmTasks.verifiedAt)))
    .orderBy(asc(swarmTasks.completedAt), asc(swarmTasks.id))
    .limit(limit)
    .all();
}

/** The employee's open goals (assigned, not manual), oldest first: the employee page shows each one's loop. */
export async function openGoals(db: Db, employeeId: string, limit: number) {
  return db
    .select()
    .from(tasks)
    .where(and(eq(tasks.assignedTo, employeeId), eq(tasks.status, "assigned"), eq(tasks.manual, false)))
    .orderBy(asc(tasks.createdAt), asc(tasks.id))
    .limit(limit)
    .all();
}
