import { and, asc, eq, notInArray, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { insertWhere } from "../lib/guarded-insert";
import { teamRounds, teamRoundVersions } from "../db/schema";
import { TERMINAL_PHASES, type RoundState } from "./composer";
import { causeChainText } from "./legs";

export type RoundRow = typeof teamRounds.$inferSelect;

export function findRound(db: Db, roundId: string): Promise<RoundRow | undefined> {
  return db.select().from(teamRounds).where(eq(teamRounds.id, roundId)).get();
}

export function listRounds(db: Db, taskId: string): Promise<RoundRow[]> {
  return db.select().from(teamRounds).where(eq(teamRounds.taskId, taskId)).orderBy(asc(teamRounds.roundNo)).all();
}

export function activeRounds(db: Db): Promise<RoundRow[]> {
  return db
    .select()
    .from(teamRounds)
    .where(notInArray(teamRounds.phase, [...TERMINAL_PHASES]))
    .all();
}

export const stateOf = (row: RoundRow) => row.state as unknown as RoundState;

/**
 * The statements that create a round at version 1 (for the caller's batch with its events): the
 * version row, then the round. With a guard both are `INSERT … SELECT … WHERE guard`, the version
 * row first so the guard reads the same state for both (the round row is what a guard may count).
 */
export function insertRound(db: Db, state: RoundState, now: Date, guard?: SQL) {
  const at = now.toISOString();
  const round = {
    id: state.round_id,
    taskId: state.task_id,
    roundNo: state.round_no,
    phase: state.phase,
    state: state as unknown as Record<string, unknown>,
    version: 1,
    startedAt: at,
    updatedAt: at,
    endedAt: TERMINAL_PHASES.has(state.phase) ? at : null,
  };
  const version = { roundId: state.round_id, version: 1, cause: "start", at };
  if (guard) return [insertWhere(db, teamRoundVersions, version, guard), insertWhere(db, teamRounds, round, guard)] as const;
  return [db.insert(teamRoundVersions).values(version), db.insert(teamRounds).values(round)] as const;
}

export interface Mutation<T> {
  state: RoundState;
  statements?: BatchItem<"sqlite">[];
  result: T;
}

const MAX_ATTEMPTS = 12;

/**
 * Read-modify-write of a round without transactions: the change lands in one batch that also inserts
 * (round, version + 1) into `team_round_versions`. Two writers that read the same version collide on
 * that key; the loser's whole batch (its jobs, tokens, events) rolls back and it retries on the
 * fresh state. `fn` returning null means "nothing to change".
 */
export async function mutateRound<T>(
  db: Db,
  roundId: string,
  cause: string,
  now: Date,
  fn: (state: RoundState) => Mutation<T> | null,
): Promise<{ state: RoundState; result: T } | null> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const row = await findRound(db, roundId);
    if (!row) return null;
    const out = fn(stateOf(row));
    if (!out) return null;
    const at = now.toISOString();
    const version = row.version + 1;
    try {
      await db.batch([
        db.insert(teamRoundVersions).values({ roundId, version, cause, at }),
        db
          .update(teamRounds)
          .set({
            state: out.state as unknown as Record<string, unknown>,
            phase: out.state.phase,
            version,
            updatedAt: at,
            ...(TERMINAL_PHASES.has(out.state.phase) && !row.endedAt ? { endedAt: at } : {}),
          })
          .where(and(eq(teamRounds.id, roundId), eq(teamRounds.version, row.version))),
        ...(out.statements ?? []),
      ]);
      return { state: out.state, result: out.result };
    } catch (err) {
      if (causeChainText(err).includes("UNIQUE constraint failed: team_round_versions.")) continue;
      throw err;
    }
  }
  throw new Error(`round ${roundId}: gave up after ${MAX_ATTEMPTS} conflicting updates`);
}
