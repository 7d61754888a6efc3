import { inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { jobs } from "../db/schema";
import { getTeamAdmission } from "../durable-objects/team-admission-rpc";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import type { JobEnd } from "../jobs/job-end";
import { endStage, launchStage, releaseEndedRounds, type StageOutcome } from "./round-driver";
import { readTeamLimits } from "./limits";
import { activeRounds, findRound, stateOf } from "./round-store";
import { teamStageResult } from "../jobs/team-stage-job";
import { cancelRoundsOfSettledTasks } from "./task-cancel";
import { requestMissingArchives } from "./attachments";
import { continueLoop, continueLoops } from "./goal-loop";

function outcomeOf(end: Pick<JobEnd, "status" | "result" | "error" | "reason">): StageOutcome {
  if (end.status === "completed") {
    // A result the stage schema cannot read counts as "nothing measured", never as made-up values.
    const parsed = teamStageResult.safeParse(end.result ?? {});
    return { status: "completed", ...(parsed.success ? { result: parsed.data } : {}) };
  }
  return {
    status: "failed",
    error: { code: end.error?.code ?? end.reason ?? "unknown", message: end.error?.message ?? `the stage job ended ${end.status}` },
    ...(end.error?.ran ? { ran: end.error.ran } : {}),
  };
}

/**
 * Owner handler of `team_round` jobs (member stages, the employee's run, the evaluator): a stage job
 * ended, so the round advances at once (no waiting for the next cron minute), and when the round
 * ended, the goal loop takes its next step. Called at least once per terminal job, possibly twice concurrently:
 * `endStage` is keyed by the stage and applied under the round's version lock.
 */
export async function onTeamStageJobEnd(env: Env, end: JobEnd): Promise<void> {
  const db = getDb(env.DB);
  const row = await findRound(db, end.owner.id);
  if (!row) return;
  const stage = stateOf(row).stages.find((s) => s.job_id === end.job_id);
  if (!stage) return;
  const now = (await loadClock(env)).now();
  await endStage(env, row.id, stage.stage_id, outcomeOf(end), now);
  // The round may have ended with this stage: the loop settles the task or starts the next round.
  await continueLoop(env, row.taskId, now);
}

/**
 * The `team` tick, the honest fallback when a prompt path was missed: spawns whose admission wait
 * ran out fail their stage; stage jobs that ended without their owner call being applied are
 * applied from the job row; stages left pending (a rate window, a crash between commit and launch)
 * are launched again; rounds that ended but still hold scaffold tickets release them.
 */
export async function teamTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const limits = await readTeamLimits(db);
  // First: a round whose goal task was settled from outside launches nothing more.
  const cancelled = await cancelRoundsOfSettledTasks(env, now);
  const expired = await getTeamAdmission(env).collectExpired({
    now: now.getTime(),
    limits: { max_active: limits.ephemeral_max_active, max_depth: limits.ephemeral_queue_max_depth, ttl_ms: limits.ephemeral_queue_ttl_ms },
  });
  for (const t of expired.expired) {
    await endStage(
      env,
      t.round_id,
      t.ticket_id,
      { status: "failed", error: { code: "admission_expired", message: "the spawn waited for a scaffold slot longer than its TTL" } },
      now,
    );
  }
  for (const t of expired.promoted) await launchStage(env, t.round_id, t.ticket_id, now);

  let applied = 0;
  let relaunched = 0;
  const rounds = await activeRounds(db);
  for (const row of rounds) {
    const state = stateOf(row);
    const dispatched = state.stages.filter((s) => s.status === "dispatched" && s.job_id);
    const rows = dispatched.length
      ? await db
          .select()
          .from(jobs)
          .where(
            inArray(
              jobs.id,
              dispatched.map((s) => s.job_id!),
            ),
          )
          .all()
      : [];
    for (const job of rows) {
      if (job.status !== "completed" && job.status !== "failed" && job.status !== "dead") continue;
      const stage = dispatched.find((s) => s.job_id === job.id)!;
      await endStage(
        env,
        row.id,
        stage.stage_id,
        outcomeOf({ status: job.status, result: job.result ?? undefined, error: job.error ?? undefined }),
        now,
      );
      applied++;
    }
    for (const stage of state.stages.filter((s) => s.status === "pending" || s.status === "waiting_admission")) {
      // Counted only when its job really went out (one over the rate window stays pending).
      if (await launchStage(env, row.id, stage.stage_id, now)) relaunched++;
    }
  }
  const endedReleased = await releaseEndedRounds(env, now);
  const loops = await continueLoops(env, now);
  // Accepted team goals whose attachments archive was never asked for (a process that stopped after the settle).
  const archives = await requestMissingArchives(env, now);
  return {
    active_rounds: rounds.length,
    admission_expired: expired.expired.length,
    stage_ends_applied: applied,
    stages_relaunched: relaunched,
    rounds_cancelled: cancelled,
    ended_rounds_released: endedReleased,
    tasks_settled: loops.settled,
    rounds_started: loops.started,
    tasks_waiting: loops.waiting,
    attachments_requested: archives,
  };
}
