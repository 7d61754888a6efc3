import { and, asc, eq, notExists, notInArray, sql } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { tasks, teamRounds, type SettledTaskStatus, type TaskRow } from "../db/schema";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { appendEvent, type NewEvent } from "../lib/events";
import { settleTask, type SettleBody } from "../tasks/settle";
import { findTask } from "../tasks/view";
import { bestRound, decideAfterRejection, type BestRound } from "./acceptance";
import { requestAttachmentsArchive } from "./attachments";
import { TERMINAL_PHASES, type RoundState } from "./composer";
import { goalsConfig } from "./goals-config";
import { judgedRound, startRound } from "./round-driver";
import { listRounds, stateOf } from "./round-store";
import { findTeamSpec, type TeamSpecRow } from "./spec-store";

/**
 * The goal loop (seed 002): every task an employee receives, unless it was created manual, is
 * worked round after round — the employee's own run, or its team — and each round's output is
 * judged on the acceptance path. An accepted round settles the task `done`; a rejected one starts
 * the next while rounds are left and its gaps are not repeating; otherwise the task parks for a
 * human with the best round so far. `continueLoop` is the one step: idempotent, safe to call from
 * any path any number of times (the owner handler after a stage ends, the request that created the
 * task, the team tick's backstop), because every write it makes is guarded.
 */

/** Who settles a task the loop settles (the `by` of `task.settled`). */
export const LOOP_SETTLER = "goal_loop";

export type LoopStep =
  | { kind: "idle"; reason: "manual" | "settled" | "unknown_task" }
  | { kind: "working"; round: RoundState }
  | { kind: "started"; round: RoundState }
  | { kind: "waiting"; reason: string }
  | { kind: "settled"; status: SettledTaskStatus; reason: string };

/** What the next round is: the team's while the spec holds a team, else the employee's own run. */
export function nextRoundMode(
  spec: Pick<TeamSpecRow, "spec" | "gate"> | undefined,
  rounds: readonly RoundState[],
): "team" | "gray" | "solo" {
  if (!spec?.spec) return "solo";
  const gate = (spec.gate as { decision?: string } | null)?.decision;
  if (gate !== "team" && gate !== "gray") return "solo";
  // A gray plan that stayed solo, or a budget that could not fund a team round: solo from then on.
  if (rounds.some((r) => r.mode === "solo" || r.regate?.decision === "solo" || r.phase === "solo")) return "solo";
  return gate === "gray" && rounds.length === 0 ? "gray" : "team";
}

export type AfterRounds = { kind: "next" } | { kind: "settle"; body: SettleBody; reason: string; best?: BestRound; repeats_round?: number };

/**
 * What follows the rounds so far (pure): the first round, a settle, or another round. A round that
 * ended for a human or failed settles as it says; an accepted one settles `done` with the rejected
 * rounds and repair passes before it as its retries; a rejected one goes on unless its gaps repeat
 * an earlier round's or the rounds are spent.
 */
export function afterRounds(rounds: readonly RoundState[], roundsBudget: number): AfterRounds {
  const last = rounds[rounds.length - 1];
  const judged = rounds.map(judgedRound);
  const retries = Math.max(0, rounds.length - 1) + rounds.filter((r) => r.repaired).length;
  const stop = (
    reason: string,
    pause_class: NonNullable<SettleBody["pause_class"]>,
    extra: { repeats_round?: number } = {},
  ): AfterRounds => {
    const best = bestRound(judged);
    return {
      kind: "settle",
      body: { status: "needs_human", pause_class, retry_count: retries },
      reason,
      ...(best ? { best } : {}),
      ...extra,
    };
  };
  if (!last) return roundsBudget > 0 ? { kind: "next" } : stop("rounds_exhausted", "budget_exhausted");
  switch (last.phase) {
    case "accepted":
      return { kind: "settle", body: { status: "done", retry_count: retries }, reason: "acceptance_passed" };
    case "settled":
      // A round recorded before the acceptance path: its verifier's verdict was the settle.
      return {
        kind: "settle",
        body: { status: last.verdict === "PASS" ? "done" : "failed", retry_count: retries },
        reason: "verifier_verdict",
      };
    case "needs_human": {
      const best = bestRound(judged);
      return {
        kind: "settle",
        body: { status: "needs_human", pause_class: last.outcome?.pause_class ?? "unknown", retry_count: retries },
        reason: last.outcome?.reason ?? "needs_human",
        ...(best ? { best } : {}),
      };
    }
    case "failed":
      return { kind: "settle", body: { status: "failed", retry_count: retries }, reason: last.outcome?.reason ?? "round_failed" };
    default: {
      // rejected, cancelled, or a gray plan recorded as `solo` before the loop: another round, if it may.
      const decision = decideAfterRejection(judged, roundsBudget);
      if (decision.kind === "next") return decision;
      return stop(
        decision.reason,
        decision.pause_class,
        decision.kind === "stop" && decision.reason === "gap_oscillation" ? { repeats_round: decision.repeats_round } : {},
      );
    }
  }
}

/**
 * One step of a task's loop. Reads the task and its rounds; a round in flight means nothing to do;
 * otherwise it settles the task or starts the next round (waiting when the employee already has
 * `max_concurrent` rounds in flight). A round that ends at once (a frozen spec that no longer holds,
 * an exhausted budget) is concluded in the same call.
 */
export async function continueLoop(env: Env, taskId: string, now: Date, opts: { resumeOthers?: boolean } = {}): Promise<LoopStep> {
  const db = getDb(env.DB);
  const cfg = await readSection(db, goalsConfig);
  for (let pass = 0; pass < 4; pass++) {
    const task = await findTask(db, taskId);
    if (!task) return { kind: "idle", reason: "unknown_task" };
    if (task.manual) return { kind: "idle", reason: "manual" };
    if (task.status !== "assigned") return { kind: "idle", reason: "settled" };
    const rounds = (await listRounds(db, taskId)).map(stateOf);
    const last = rounds[rounds.length - 1];
    if (last && !TERMINAL_PHASES.has(last.phase)) return { kind: "working", round: last };

    const budget = task.roundsBudget ?? cfg.iteration_cap;
    const next = afterRounds(rounds, budget);
    if (next.kind === "settle") {
      const out = await settleLoop(db, task, next, rounds, budget, now);
      // An accepted team goal's named files go to the employee's attachments (seed 002); the team tick retries a miss.
      if (next.reason === "acceptance_passed") {
        await requestAttachmentsArchive(env, taskId, now).catch((err: unknown) =>
          console.error(`attachments: requesting the archive of ${taskId} failed; the team tick will`, err),
        );
      }
      if (opts.resumeOthers !== false) await resumeWaiting(env, task.assignedTo, now);
      return out;
    }
    const mode = nextRoundMode(await findTeamSpec(db, taskId), rounds);
    const started = await startRound(env, { taskId, mode, slot: { employeeId: task.assignedTo, maxConcurrent: cfg.max_concurrent } }, now);
    if ("waiting" in started) {
      if (started.reason === "raced" || started.reason === "round_in_progress" || started.reason === "task_not_assigned") continue;
      // Said once per round it waits for, so the task's feed shows why nothing runs yet.
      await db.batch([
        appendEvent(
          db,
          {
            type: "goal_waiting",
            subject: taskId,
            payload: {
              task_id: taskId,
              round: rounds.length + 1,
              employee_id: task.assignedTo,
              reason: started.reason,
              max_concurrent: cfg.max_concurrent,
            },
            dedupeKey: `goal_waiting:${taskId}:${rounds.length + 1}`,
          },
          now,
        ),
      ]);
      return { kind: "waiting", reason: started.reason };
    }
    if (!TERMINAL_PHASES.has(started.state.phase)) return { kind: "started", round: started.state };
  }
  return { kind: "waiting", reason: "contended" };
}

async function settleLoop(
  db: Db,
  task: TaskRow,
  next: Extract<AfterRounds, { kind: "settle" }>,
  rounds: readonly RoundState[],
  budget: number,
  now: Date,
): Promise<LoopStep> {
  const accepted = next.body.status === "done" && next.reason === "acceptance_passed";
  const event: NewEvent = {
    type: accepted ? "goal_accepted" : next.body.status === "needs_human" ? "goal_stopped" : "goal_ended",
    subject: task.id,
    payload: {
      task_id: task.id,
      status: next.body.status,
      reason: next.reason,
      ...(next.body.pause_class ? { pause_class: next.body.pause_class } : {}),
      rounds: rounds.length,
      rounds_budget: budget,
      ...(next.best ? { best_round: next.best } : {}),
      ...(next.repeats_round !== undefined ? { repeats_round: next.repeats_round } : {}),
    },
    dedupeKey: `goal_end:${task.id}`,
  };
  try {
    await settleTask(db, task.id, next.body, LOOP_SETTLER, now, [event]);
  } catch (err) {
    // Settled by someone else meanwhile (an operator): theirs stands.
    if ((err as { code?: string }).code !== "already_settled") throw err;
  }
  return { kind: "settled", status: next.body.status, reason: next.reason };
}

/** Worked tasks of an employee (or of everyone) that have no round in flight, oldest first. */
function idleWorkedTasks(db: Db, employeeId: string | undefined, limit: number) {
  const live = db
    .select({ one: sql`1` })
    .from(teamRounds)
    .where(and(eq(teamRounds.taskId, tasks.id), notInArray(teamRounds.phase, [...TERMINAL_PHASES])));
  return db
    .select({ id: tasks.id })
    .from(tasks)
    .where(
      and(
        eq(tasks.status, "assigned"),
        eq(tasks.manual, false),
        ...(employeeId ? [eq(tasks.assignedTo, employeeId)] : []),
        notExists(live),
      ),
    )
    .orderBy(asc(tasks.createdAt))
    .limit(limit)
    .all();
}

/** A slot of the employee freed: its oldest waiting tasks get their next round, as many as fit. */
export async function resumeWaiting(env: Env, employeeId: string, now: Date): Promise<number> {
  const db = getDb(env.DB);
  const cfg = await readSection(db, goalsConfig);
  let started = 0;
  for (const { id } of await idleWorkedTasks(db, employeeId, cfg.max_concurrent + 1)) {
    const step = await continueLoop(env, id, now, { resumeOthers: false });
    if (step.kind === "started") started++;
    if (step.kind === "waiting" && step.reason === "max_concurrent") break;
  }
  return started;
}

/**
 * The team tick's backstop: worked tasks with no round in flight (a process that stopped between a
 * round's end and the next step, a task that waited for a slot) take their next step.
 */
export async function continueLoops(env: Env, now: Date, limit = 50): Promise<{ started: number; settled: number; waiting: number }> {
  const db = getDb(env.DB);
  const out = { started: 0, settled: 0, waiting: 0 };
  for (const { id } of await idleWorkedTasks(db, undefined, limit)) {
    const step = await continueLoop(env, id, now, { resumeOthers: false });
    if (step.kind === "started") out.started++;
    else if (step.kind === "settled") out.settled++;
    else if (step.kind === "waiting") out.waiting++;
  }
  return out;
}

/** The loop as `GET /v1/tasks/:id` shows it (`goal_loop`). */
export async function goalLoopView(db: Db, task: TaskRow) {
  if (task.manual) return { manual: true as const };
  const cfg = await readSection(db, goalsConfig);
  const rounds = (await listRounds(db, task.id)).map(stateOf);
  const budget = task.roundsBudget ?? cfg.iteration_cap;
  const last = rounds[rounds.length - 1];
  const live = last && !TERMINAL_PHASES.has(last.phase);
  const evaluated = rounds.filter((r) => r.evaluation).at(-1);
  const best = bestRound(rounds.map(judgedRound));
  return {
    manual: false as const,
    state: task.status !== "assigned" ? "ended" : live ? "working" : "waiting",
    rounds_budget: budget,
    rounds_used: rounds.length,
    rounds_left: Math.max(0, budget - rounds.length),
    ...(last ? { current_round: { round_id: last.round_id, round: last.round_no, mode: last.mode, phase: last.phase } } : {}),
    ...(evaluated?.evaluation
      ? {
          last_evaluation: {
            round: evaluated.round_no,
            source: evaluated.evaluation.source,
            accepted: evaluated.evaluation.accepted,
            met: evaluated.evaluation.criteria.filter((c) => c.met).length,
            of: evaluated.evaluation.criteria.length,
            unmet: evaluated.evaluation.unmet,
            fingerprint: evaluated.evaluation.fingerprint,
          },
        }
      : {}),
    ...(best && rounds.length ? { best_round: best } : {}),
  };
}
