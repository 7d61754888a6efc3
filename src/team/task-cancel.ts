import { and, eq, ne, notInArray } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { tasks, teamRounds } from "../db/schema";
import type { Env } from "../env";
import { TERMINAL_PHASES } from "./composer";
import { abortTeamRound } from "./round-driver";

/**
 * A goal task settled from outside its round (an operator's `POST /v1/tasks/:id/settle` while the
 * team still works) cancels that round: its member tokens are revoked (so the runner's round check
 * stops a running member and removes its scaffold), its queued spawns are purged and its unused
 * budget is freed. The task keeps the operator's settle; the round says `cancelled`.
 */
async function liveRoundsOfSettledTasks(db: Db, taskId?: string, limit = 50) {
  return db
    .select({ roundId: teamRounds.id, taskId: teamRounds.taskId, status: tasks.status })
    .from(teamRounds)
    .innerJoin(tasks, eq(tasks.id, teamRounds.taskId))
    .where(
      and(
        notInArray(teamRounds.phase, [...TERMINAL_PHASES]),
        ne(tasks.status, "assigned"),
        ...(taskId ? [eq(teamRounds.taskId, taskId)] : []),
      ),
    )
    .limit(limit)
    .all();
}

/** Cancels the live rounds of settled goal tasks (one task, or every one for the tick's backstop). */
export async function cancelRoundsOfSettledTasks(env: Env, now: Date, taskId?: string): Promise<number> {
  const rows = await liveRoundsOfSettledTasks(getDb(env.DB), taskId);
  let cancelled = 0;
  for (const row of rows) {
    const state = await abortTeamRound(
      env,
      row.roundId,
      { status: "cancelled", reason: "task_settled", detail: `the goal task was settled ${row.status} while the round ran` },
      now,
    );
    if (state.phase === "cancelled") cancelled++;
  }
  return cancelled;
}
