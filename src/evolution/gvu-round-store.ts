import { eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { guarded, isGuardFailure } from "../db/guard";
import { gvuRounds, type GvuRoundRow, type GvuRoundStatus } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { endRequest } from "./triggers";

/**
 * A GVU round's row and how it moves (a guarded step that lands only while the round still waits for
 * the job it names), shared by the round (gvu-round.ts) and the apply step (gvu-apply.ts), which
 * import each other's work through here instead of through each other.
 */

export function findRound(db: Db, id: string) {
  return db.select().from(gvuRounds).where(eq(gvuRounds.id, id)).get();
}

/** The round's update, landing only while it still waits for `jobId` (else the whole batch aborts). */
export function roundStep(
  db: Db,
  roundId: string,
  waitedFor: string,
  status: GvuRoundStatus,
  fields: Partial<typeof gvuRounds.$inferInsert>,
  now: Date,
  extra?: ReturnType<typeof sql>,
) {
  const cond = extra
    ? sql`${gvuRounds.pendingJobId} = ${waitedFor} AND ${gvuRounds.status} IN ('generating', 'judging') AND ${extra}`
    : sql`${gvuRounds.pendingJobId} = ${waitedFor} AND ${gvuRounds.status} IN ('generating', 'judging')`;
  return db
    .update(gvuRounds)
    .set({ ...fields, status: sql`${guarded(cond, status)}`, updatedAt: now.toISOString() })
    .where(eq(gvuRounds.id, roundId));
}

export const isRoundMoved = (err: unknown) => isGuardFailure(err, "gvu_rounds.status");

/** Ends the round (abandoned, failed, discarded) and its request, which gives the lock and slot back. */
export async function finishRound(
  env: Env,
  db: Db,
  round: GvuRoundRow,
  waitedFor: string,
  status: Extract<GvuRoundStatus, "abandoned" | "failed" | "discarded">,
  outcome: Record<string, unknown>,
  now: Date,
  more: {
    attempts?: number;
    gradients?: Record<string, unknown>[];
    generations?: Record<string, unknown>[];
    extra?: BatchItem<"sqlite">[];
  } = {},
): Promise<void> {
  const at = now.toISOString();
  const ok = await guardedBatch(db, [
    roundStep(
      db,
      round.id,
      waitedFor,
      status,
      {
        phase: null,
        pendingJobId: null,
        outcome,
        endedAt: at,
        ...(more.attempts !== undefined ? { attempts: more.attempts } : {}),
        ...(more.gradients ? { gradients: more.gradients } : {}),
        ...(more.generations ? { generations: more.generations } : {}),
      },
      now,
    ),
    ...(more.extra ?? []),
    appendEvent(
      db,
      {
        type: `evolution.gvu_${status}`,
        subject: round.employeeId,
        payload: { agent_id: round.employeeId, round_id: round.id, request_id: round.requestId, ...outcome },
      },
      now,
    ),
  ]);
  if (ok)
    await endRequest(
      env,
      round.requestId,
      { status: status === "abandoned" ? "done" : "failed", reason: String(outcome.reason ?? status) },
      now,
    );
}

/** Runs a batch whose first statement is a `roundStep`; false when the round had already moved on. */
export async function guardedBatch(db: Db, statements: BatchItem<"sqlite">[]): Promise<boolean> {
  if (statements.length === 0) return true;
  try {
    await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    return true;
  } catch (err) {
    if (isRoundMoved(err)) return false;
    throw err;
  }
}
