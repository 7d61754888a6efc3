import { and, eq, sql } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { PAUSE_CLASSES, SETTLED_TASK_STATUSES, tasks, type TaskRow } from "../db/schema";
import { readSection } from "../lib/config";
import { AppError, notFound } from "../lib/errors";
import type { NewEvent } from "../lib/events";
import { appendEventWhere } from "../lib/guarded-insert";
import { topologyConfig } from "../topology/config";
import { observeOverrides } from "../topology/observe";
import { findTask } from "./view";

export const settleBody = z
  .strictObject({
    status: z.enum(SETTLED_TASK_STATUSES),
    retry_count: z.number().int().min(0).max(10_000).optional(),
    pause_class: z.enum(PAUSE_CLASSES).optional(),
  })
  .superRefine((body, ctx) => {
    if (body.pause_class !== undefined && body.status !== "needs_human") {
      ctx.addIssue({ code: "custom", path: ["pause_class"], message: "pause_class is only for status needs_human" });
    }
  });
export type SettleBody = z.infer<typeof settleBody>;

/**
 * Settles an assigned task once (one conditional update, its event in the same batch). Repeating
 * the same settle is a no-op 200; a different one is 409 `already_settled`. With topology evolution
 * on, a settled goal task of an employee under observation is judged at once (seed 000 step 5:
 * a failing reroute is rolled back immediately, not at the next tick).
 */
export async function settleTask(
  db: Db,
  id: string,
  body: SettleBody,
  actor: string,
  now: Date,
  /** Events that record why it settled (the goal loop's), landing only with the settle itself. */
  extraEvents: readonly NewEvent[] = [],
): Promise<{ task: TaskRow; changed: boolean }> {
  const row = await findTask(db, id);
  if (!row) throw notFound(`task ${id}`);
  const pauseClass = body.status === "needs_human" ? (body.pause_class ?? "unknown") : null;
  const retryCount = body.retry_count ?? row.retryCount;
  const open = and(eq(tasks.id, id), eq(tasks.status, "assigned"));
  const at = now.toISOString();
  const stillOpen = sql`EXISTS (SELECT 1 FROM ${tasks} WHERE ${open})`;
  const results = await db.batch([
    appendEventWhere(
      db,
      {
        type: "task.settled",
        subject: id,
        payload: {
          task_id: id,
          status: body.status,
          retry_count: retryCount,
          ...(pauseClass ? { pause_class: pauseClass } : {}),
          mode: row.mode,
          task_class: row.taskClass,
          assigned_to: row.assignedTo,
          by: actor,
        },
        dedupeKey: `task:${id}:settled`,
      },
      now,
      stillOpen,
    ),
    ...extraEvents.map((e) => appendEventWhere(db, e, now, stillOpen)),
    db.update(tasks).set({ status: body.status, retryCount, pauseClass, settledAt: at, settledBy: actor }).where(open).returning(),
  ]);
  const settled = (results[results.length - 1] as TaskRow[])[0];
  if (!settled) {
    const current = (await findTask(db, id))!;
    if (current.status === body.status && current.retryCount === retryCount && current.pauseClass === pauseClass)
      return { task: current, changed: false };
    throw new AppError("already_settled", `task ${id} is already ${current.status}`, {
      extra: {
        current_status: current.status,
        retry_count: current.retryCount,
        ...(current.pauseClass ? { pause_class: current.pauseClass } : {}),
      },
    });
  }
  if (settled.mode === "goal") {
    const topology = await readSection(db, topologyConfig);
    // The settle has landed; a failed judgement here is retried by the next tick, not reported as a failed settle.
    if (topology.enabled) {
      await observeOverrides(db, topology, now, { toAgent: settled.assignedTo, taskClass: settled.taskClass }).catch((err: unknown) =>
        console.error(`topology: judging overrides after settling ${id} failed; the next tick will`, err),
      );
    }
  }
  return { task: settled, changed: true };
}
