import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks, teamRounds } from "../db/schema";
import { AppError } from "../lib/errors";
import { settleTask, type SettleBody } from "../tasks/settle";
import { findTask } from "../tasks/view";
import { TERMINAL_PHASES, type RoundState } from "./composer";

/** Who settles a goal task when its team round ends (the `by` of `task.settled`). */
export const TEAM_SETTLER = "team";

/**
 * How a goal task settles when its round ends: the verifier's PASS is `done`, its FAIL `failed`
 * (the repair pass, if one ran, counts as a retry); a round parked for a human is `needs_human`
 * with the round's pause class; a round that failed (a frozen spec that no longer holds) is
 * `failed`. A gray-zone round that went solo settles nothing: the goal goes on as a solo goal.
 */
export function settleForRound(state: RoundState): SettleBody | null {
  const retry_count = state.repaired ? 1 : 0;
  switch (state.phase) {
    case "settled":
      return { status: state.verdict === "PASS" ? "done" : "failed", retry_count };
    case "needs_human":
      return { status: "needs_human", retry_count, pause_class: state.outcome?.pause_class ?? "unknown" };
    case "failed":
      return { status: "failed", retry_count };
    default:
      return null;
  }
}

/**
 * Settles the round's goal task, once: settling is one conditional update, so the owner handler
 * running twice, or the tick catching up, changes nothing more. A task settled otherwise in the
 * meantime (an operator) is left as it is; a round of a task the tasks table does not know (a
 * round started from code) settles nothing.
 */
export async function settleTaskForRound(db: Db, state: RoundState, now: Date): Promise<"settled" | "unchanged" | "skipped"> {
  const body = settleForRound(state);
  if (!body) return "skipped";
  const task = await findTask(db, state.task_id);
  if (!task || task.status !== "assigned") return "skipped";
  try {
    const out = await settleTask(db, state.task_id, body, TEAM_SETTLER, now);
    return out.changed ? "settled" : "unchanged";
  } catch (err) {
    if (err instanceof AppError && err.code === "already_settled") return "unchanged";
    throw err;
  }
}

/**
 * The tick's backstop: goal tasks still `assigned` whose latest round ended (the process stopped
 * between the round's end and its settle). Bounded per tick.
 */
export async function unsettledEndedRounds(db: Db, limit = 50): Promise<RoundState[]> {
  const terminal = [...TERMINAL_PHASES].filter((p) => p !== "solo");
  const rows = await db
    .select({ state: teamRounds.state })
    .from(teamRounds)
    .innerJoin(tasks, eq(tasks.id, teamRounds.taskId))
    .where(
      and(
        eq(tasks.status, "assigned"),
        inArray(teamRounds.phase, terminal),
        sql`${teamRounds.roundNo} = (SELECT MAX(r2.round_no) FROM ${teamRounds} r2 WHERE r2.task_id = ${teamRounds.taskId})`,
      ),
    )
    .limit(limit)
    .all();
  return rows.map((r) => r.state as unknown as RoundState);
}
