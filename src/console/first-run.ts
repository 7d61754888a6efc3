import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { RUNTIMES } from "../db/runtimes";
import { credentials, employees, tasks, teamRounds } from "../db/schema";
import { runnerActivityEverywhere, type InboxEnv } from "../jobs/inbox-routing";
import { LIVE_RUNTIME_MS, liveRuntimes } from "../jobs/runner-runtimes";

/** A runner that asked for work within the last ten minutes, with a token nobody revoked. */
export interface LiveRunner {
  runner_id: string;
  name: string;
  last_poll_at: string;
}

/**
 * What an install has done of the four first steps (a runner, an employee, a goal, a round that
 * ran), read from the real state. The console shows the "Get started" panel until all four are done.
 */
export interface FirstRun {
  runners: LiveRunner[];
  employees: number;
  goals: number;
  roundsEnded: number;
  /** The first goal task, to link to while its rounds run. */
  firstGoal: string | null;
}

export async function liveRunners(env: InboxEnv, db: Db, now: Date): Promise<LiveRunner[]> {
  const [activity, tokens] = await Promise.all([
    runnerActivityEverywhere(env),
    db
      .select({ id: credentials.id, name: credentials.name })
      .from(credentials)
      .where(and(eq(credentials.kind, "runner"), isNull(credentials.revokedAt)))
      .all(),
  ]);
  const names = new Map(tokens.map((t) => [t.id, t.name]));
  const since = now.getTime() - LIVE_RUNTIME_MS;
  return activity
    .filter((a) => names.has(a.runner_id) && Date.parse(a.last_poll_at) >= since)
    .map((a) => ({ runner_id: a.runner_id, name: names.get(a.runner_id)!, last_poll_at: a.last_poll_at }));
}

/**
 * The four steps' state, or null once a goal's round has ended (a runner evidently ran it, so the
 * panel has nothing left to teach; the runners are then not asked at all).
 */
export async function firstRunState(env: InboxEnv, db: Db, now: Date): Promise<FirstRun | null> {
  const count = sql<number>`count(*)`;
  const [[staff], [goals], [rounds], first] = await Promise.all([
    db.select({ n: count }).from(employees).all(),
    db.select({ n: count }).from(tasks).where(eq(tasks.mode, "goal")).all(),
    db.select({ n: count }).from(teamRounds).where(isNotNull(teamRounds.endedAt)).all(),
    db.select({ id: tasks.id }).from(tasks).where(eq(tasks.mode, "goal")).orderBy(tasks.createdAt).limit(1).get(),
  ]);
  const state = { employees: staff?.n ?? 0, goals: goals?.n ?? 0, roundsEnded: rounds?.n ?? 0, firstGoal: first?.id ?? null };
  if (state.employees > 0 && state.goals > 0 && state.roundsEnded > 0) return null;
  return { runners: await liveRunners(env, db, now), ...state };
}

/** The runtimes the create form offers: those a live runner offers now first, then the rest, marked. */
export async function runtimeChoices(db: Db, now: Date): Promise<{ runtime: (typeof RUNTIMES)[number]; offered: boolean }[]> {
  const live = await liveRuntimes(db, now);
  const all = RUNTIMES.map((runtime) => ({ runtime, offered: live.has(runtime) }));
  return [...all.filter((r) => r.offered), ...all.filter((r) => !r.offered)];
}
