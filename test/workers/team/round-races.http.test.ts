import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { jobs, teamRoundVersions } from "../../../src/db/schema";
import { getTeamAdmission } from "../../../src/durable-objects/team-admission-rpc";
import { openTeamGoal } from "../../../src/team/goals";
import { listRoleTurns } from "../../../src/team/ledger";
import { startTeamRound } from "../../../src/team/round-driver";
import { onTeamStageJobEnd, teamTick } from "../../../src/team/round-handler";
import { call, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import { completeStage, handoff, lastRound, leaseStages, runEvaluator, waitForTeamTask } from "../../factories/scripted-runner";
import { db, employee, nameEvaluator, newTaskId, putTeamConfig, SEED_TEAM } from "../../factories/team";

// The gate is not under test here: `always_team` (test only, seed 002) forms the team whatever the goal measures.
const ALWAYS_TEAM = { gate: "always_team" } as const;

async function teamTask(goal = { title: "Write the notes", acceptance_criteria: ["a", "b", "c"] }) {
  await putTeamConfig({ ...SEED_TEAM, executor_fanout: 2 });
  const taskId = newTaskId();
  await openTeamGoal(db(), { taskId, employee: employee({ team: ALWAYS_TEAM }), goal }, new Date());
  return taskId;
}

describe("rounds under concurrency", () => {
  beforeAll(() => nameEvaluator());

  it("applies repeated and concurrent owner calls for sibling stages exactly once each", async () => {
    const taskId = await teamTask();
    const runner = await createRunner("race-runner");
    const { state } = await startTeamRound(env, taskId, new Date());
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    for (const id of ["a", "b"]) await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: id }));
    await completeStage(runner.token, plan!, { text: "planned" });
    const executors = await leaseStages(runner.token, 2, { taskId });
    for (const job of executors)
      await handoff(job.payload.member_token, packet(taskId, 1, "executor", "verifier", { packet_id: `out-${job.payload.stage_id}` }));

    // Both executors end at once, and each end is reported twice (the inbox may call an owner twice).
    const end = (job: (typeof executors)[number]) => ({
      job_id: job.job_id,
      kind: "team_stage",
      owner: { kind: "team_round" as const, id: state.round_id },
      status: "completed" as const,
      attempt: 1,
      at: new Date().toISOString(),
      result: { text: "done", runtime: "codex", model: "gpt-5.5" },
    });
    await Promise.all(executors.flatMap((job) => [onTeamStageJobEnd(env, end(job)), onTeamStageJobEnd(env, end(job))]));

    const view = (await call(`/v1/team/tasks/${taskId}`)).body;
    const round = lastRound(view);
    expect(round.phase).toBe("synthesizing");
    expect(round.stages.filter((s: any) => s.kind === "synthesize")).toHaveLength(1);
    expect(round.stages.filter((s: any) => s.kind === "execute").map((s: any) => s.status)).toEqual(["completed", "completed"]);
    const turns = await listRoleTurns(db(), taskId);
    expect(turns.filter((t) => t.role === "executor")).toHaveLength(2);
    const synthJobs = (await db().select().from(jobs).where(eq(jobs.ownerId, state.round_id)).all()).filter(
      (j) => j.payload.stage === "synthesize",
    );
    expect(synthJobs).toHaveLength(1);
    // Every state change took exactly one version; none was lost to a racing writer.
    const versions = await db().select().from(teamRoundVersions).where(eq(teamRoundVersions.roundId, state.round_id)).all();
    expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual(Array.from({ length: round.version }, (_, i) => i + 1));

    // The runner's own completions of the same jobs later change nothing.
    for (const job of executors) await completeStage(runner.token, job, { text: "done" });
    expect(lastRound((await call(`/v1/team/tasks/${taskId}`)).body).version).toBe(round.version);
    await completeStage(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, { text: "Synthesis" });
    const [verify] = await leaseStages(runner.token, 1, { taskId });
    await completeStage(runner.token, verify!, { verdict: "PASS" });
    await runEvaluator(runner.token, taskId, 3);
    await waitForTeamTask(taskId, (v) => lastRound(v).phase === "accepted");
  });

  it("refuses to start a second round while one is in progress, even when both starts race", async () => {
    const taskId = await teamTask();
    const results = await Promise.allSettled([startTeamRound(env, taskId, new Date()), startTeamRound(env, taskId, new Date())]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({ reason: { code: "conflict" } });
    const view = (await call(`/v1/team/tasks/${taskId}`)).body;
    expect(view.rounds).toHaveLength(1);
    expect(view.budget.rounds).toHaveLength(1);
  });
});

describe("the team tick", () => {
  it("applies a stage end whose owner call never arrived, from the job row", async () => {
    const taskId = await teamTask();
    const runner = await createRunner("tick-runner");
    await startTeamRound(env, taskId, new Date());
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: "only" }));
    // The job's end reached D1, but its owner call was lost (what the inbox records as job.owner_unhandled).
    await db()
      .update(jobs)
      .set({ status: "completed", result: { text: "planned" }, finishedAt: new Date().toISOString() })
      .where(eq(jobs.id, plan!.job_id));
    expect(lastRound((await call(`/v1/team/tasks/${taskId}`)).body).phase).toBe("planning");
    const summary = await teamTick(env, new Date());
    expect(summary).toMatchObject({ stage_ends_applied: 1 });
    const round = lastRound((await call(`/v1/team/tasks/${taskId}`)).body);
    expect(round.phase).toBe("executing");
    expect(round.stages.filter((s: any) => s.kind === "execute")).toHaveLength(1);
  });

  it("releases the scaffold slot and the budget hold of a round that ended without releasing them", async () => {
    const taskId = await teamTask();
    const { state } = await startTeamRound(env, taskId, new Date());
    expect((await getTeamAdmission(env).status()).active.map((t) => t.round_id)).toContain(state.round_id);
    // The round's terminal write landed, then the process stopped before its release.
    await env.DB.prepare(`UPDATE team_rounds SET phase = 'needs_human', state = json_set(state, '$.phase', 'needs_human') WHERE id = ?`)
      .bind(state.round_id)
      .run();
    const summary = await teamTick(env, new Date());
    expect(summary.ended_rounds_released).toBeGreaterThanOrEqual(1);
    const status = await getTeamAdmission(env).status();
    expect([...status.active, ...status.queued].filter((t) => t.round_id === state.round_id)).toEqual([]);
    expect((await call(`/v1/team/tasks/${taskId}`)).body.budget.held).toBe(0);
  });

  it("runs from POST /v1/admin/ticks/team", async () => {
    const res = await call("/v1/admin/ticks/team", { method: "POST" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ran: "team", summary: { admission_expired: 0 } });
  });
});

describe("invalid stage requests", () => {
  it("refuses a stage whose request cannot be valid before it waits for a slot or spends a spawn", async () => {
    // Frozen acceptance criteria are protected text: they are never cut, so these cannot fit a stage.
    const huge = Array.from({ length: 60 }, (_, i) => `${i}: ${"検証".repeat(900)}`);
    const taskId = await teamTask({ title: "Too much", acceptance_criteria: huge });
    const { state } = await startTeamRound(env, taskId, new Date());
    expect(state).toMatchObject({ phase: "needs_human", outcome: { reason: "team_stage_failed" } });
    expect(state.stages[0]).toMatchObject({ status: "failed", error: { code: "invalid_stage_request" } });
    expect((await getTeamAdmission(env).status()).queued.filter((t) => t.round_id === state.round_id)).toEqual([]);
    const view = (await call(`/v1/team/tasks/${taskId}`)).body;
    expect(view.budget).toMatchObject({ spent: 0, held: 0 });
    expect(await db().select().from(jobs).where(eq(jobs.ownerId, state.round_id)).all()).toEqual([]);
  });
});
