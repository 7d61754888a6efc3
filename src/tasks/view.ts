import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks, type TaskRow } from "../db/schema";

export function findTask(db: Db, id: string) {
  return db.select().from(tasks).where(eq(tasks.id, id)).get();
}

/** A task as the API shows it; `pause_class` appears only on needs_human, settle fields once settled. */
export function taskView(t: TaskRow) {
  return {
    task_id: t.id,
    title: t.title,
    mode: t.mode,
    tags: t.tags,
    priority: t.priority,
    task_class: t.taskClass,
    acceptance_criteria: t.acceptanceCriteria,
    assignee: t.assignee,
    assigned_to: t.assignedTo,
    routed_by: t.routedBy,
    route: t.route,
    status: t.status,
    retry_count: t.retryCount,
    manual: t.manual,
    ...(t.pauseClass ? { pause_class: t.pauseClass } : {}),
    created_by: t.createdBy,
    created_at: t.createdAt,
    ...(t.settledAt ? { settled_at: t.settledAt, settled_by: t.settledBy } : {}),
    ...(t.originConversationId ? { conversation_id: t.originConversationId } : {}),
  };
}
