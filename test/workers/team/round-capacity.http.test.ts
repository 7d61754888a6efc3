import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getTeamAdmission } from "../../../src/durable-objects/team-admission-rpc";
import { openTeamGoal } from "../../../src/team/goals";
import { readTeamLimits } from "../../../src/team/limits";
import { abortTeamRound, startTeamRound } from "../../../src/team/round-driver";
import { teamTick } from "../../../src/team/round-handler";
import { call, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import {
  completeStage,
  handoff,
  lastRound,
  leaseStages,
  runEvaluator,
  waitForTeamTask,
  type LeasedStage,
} from "../../factories/scripted-runner";
import { db, employee, eventsOf, nameEvaluator, newTaskId, putTeamConfig, putTeamDispatchLimits, SEED_TEAM } from "../../factories/team";

const goal = { title: "Write the notes", acceptance_criteria: ["a", "b", "c"] };
// A gray goal, as measured: the title names an artifact and there are 3 criteria (long horizon holds),
// the capability matrix measured a gap (it holds), and no criterion names an independent item.
const grayGoal = { title: "Write notes/index.md", acceptance_criteria: ["a", "b", "c"] };
const measuredGap = { gap_pp: 20, mde_pp: 10 };

beforeAll(() => nameEvaluator());

async function teamTask(fanout = 3, gate: "team" | "gray" = "team", who = employee()) {
  await putTeamConfig({ ...SEED_TEAM, executor_fanout: fanout });
  const taskId = newTaskId();
  // The team variant does not test the gate: `always_team` (test only, seed 002) forms it.
  const opened = await openTeamGoal(
    db(),
    gate === "team"
      ? { taskId, employee: { ...who, team: { gate: "always_team" } }, goal }
      : { taskId, employee: who, goal: grayGoal, capability_gap: measuredGap },
    new Date(),
  );
  expect(opened).toMatchObject({ gate: { decision: gate } });
  return taskId;
}

async function plan(runner: string, job: LeasedStage, subtasks: { id: string; depends_on?: string[] }[]) {
  for (const s of subtasks) {
    const res = await handoff(
      job.payload.member_token,
      packet(job.payload.task_id, job.payload.round, "planner", "executor", { packet_id: s.id, depends_on: s.depends_on ?? [] }),
    );
    expect(res.status).toBe(201);
  }
  await completeStage(runner, job, { text: "planned" });
}

async function finishExecutors(runner: string, jobs: LeasedStage[]) {
  for (const job of jobs) {
    await handoff(
      job.payload.member_token,
      packet(job.payload.task_id, job.payload.round, "executor", "verifier", { packet_id: `out-${job.payload.stage_id}` }),
    );
    await completeStage(runner, job, { text: "done" });
  }
}

describe("spawn budget across rounds", () => {
  it("runs the degrade chain round by round and ends in needs_human 'budget exhausted' with the best round so far", async () => {
    await putTeamDispatchLimits({ team_budget: { max_spawns_per_task: 8 } });
    const taskId = await teamTask(3);
    const runner = await createRunner("budget-runner");

    // Round 1: the full round (planner + 3 executors + verifier + repair = 6) fits 8.
    const r1 = (await startTeamRound(env, taskId, new Date())).state;
    expect(r1).toMatchObject({ plan: { executors: 3, repair: true, utility: true }, degrade_steps: [] });
    await plan(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, [{ id: "a" }, { id: "b" }, { id: "c" }]);
    await finishExecutors(runner.token, await leaseStages(runner.token, 3, { taskId }));
    await completeStage(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, { text: "Synthesis" });
    await completeStage(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, { verdict: "FAIL", reasons: ["b is wrong"] });
    await finishExecutors(runner.token, await leaseStages(runner.token, 1, { taskId }));
    await runEvaluator(runner.token, taskId, 3, [2]);
    await waitForTeamTask(taskId, (v) => lastRound(v).phase === "rejected");

    // Round 2: 2 spawns left → utility, then the repair pass, then the replicas are given up; 3 still does not fit.
    const r2 = (await startTeamRound(env, taskId, new Date())).state;
    expect(r2).toMatchObject({
      phase: "needs_human",
      outcome: { reason: "budget_exhausted", pause_class: "budget_exhausted" },
      degrade_steps: ["utility", "verifier_second_pass", "executor_replica"],
    });
    const [exhausted] = await eventsOf("team_budget_exhausted", taskId);
    expect(exhausted!.payload).toMatchObject({
      best_round: { round_id: r1.round_id, round: 1, verdict: "FAIL", met: 2, of: 3, unmet: [2] },
      steps: ["utility", "verifier_second_pass", "executor_replica"],
    });
    const view = (await call(`/v1/team/tasks/${taskId}`)).body;
    expect(view.budget).toMatchObject({ spent: 6, held: 0, remaining: 2, limits: { max_spawns_per_task: 8 } });
    await putTeamDispatchLimits({});
  });

  it("degrades a round that does not fit whole and records the steps it took", async () => {
    await putTeamDispatchLimits({ team_budget: { max_spawns_per_task: 4 } });
    const taskId = await teamTask(3);
    const { state } = await startTeamRound(env, taskId, new Date());
    expect(state).toMatchObject({
      phase: "planning",
      degrade_steps: ["utility", "verifier_second_pass", "executor_replica"],
      plan: { executors: 1, repair: false, utility: false },
    });
    const [degraded] = await eventsOf("team_budget_degraded", taskId);
    expect(degraded!.payload.steps).toEqual(["utility", "verifier_second_pass", "executor_replica"]);
    await abortTeamRound(env, state.round_id, { status: "needs_human", reason: "operator_stop" }, new Date());
    await putTeamDispatchLimits({});
  });
});

describe("scaffold admission across rounds", () => {
  it("queues spawns beyond ephemeral_max_active in FIFO order, and a finished round purges exactly its own queued spawns", async () => {
    await putTeamDispatchLimits({ ephemeral_max_active: 1 });
    const runner = await createRunner("admission-runner");
    const taskA = await teamTask(2);
    const taskB = await teamTask(2);
    const roundA = (await startTeamRound(env, taskA, new Date())).state;
    const roundB = (await startTeamRound(env, taskB, new Date())).state;
    expect(roundB.stages[0]!.status).toBe("waiting_admission");

    // A's planner ends: its slot goes to B's planner (queued first), A's two executors queue behind it.
    const [planA] = await leaseStages(runner.token, 1, { taskId: taskA });
    expect(planA!.payload.task_id).toBe(taskA);
    await plan(runner.token, planA!, [{ id: "a1" }, { id: "a2" }]);
    const [planB] = await leaseStages(runner.token, 1, { taskId: taskB });
    expect(planB!.payload.task_id).toBe(taskB);
    const status = await getTeamAdmission(env).status();
    expect(status.active.map((t) => t.round_id)).toEqual([roundB.round_id]);
    expect(status.queued.map((t) => t.round_id)).toEqual([roundA.round_id, roundA.round_id]);

    // Round A ends (an operator stop): exactly its two queued spawns go, B keeps its slot.
    await abortTeamRound(env, roundA.round_id, { status: "needs_human", reason: "operator_stop" }, new Date());
    expect(await getTeamAdmission(env).status()).toEqual({
      active: [{ ticket_id: planB!.payload.stage_id, round_id: roundB.round_id }],
      queued: [],
    });
    const viewA = (await call(`/v1/team/tasks/${taskA}`)).body;
    expect(
      lastRound(viewA)
        .stages.filter((s: any) => s.kind === "execute")
        .map((s: any) => s.status),
    ).toEqual(["waiting_admission", "waiting_admission"]);
    expect(viewA.budget.held).toBe(0);

    // B carries on alone.
    await plan(runner.token, planB!, [{ id: "b1" }]);
    const [execB] = await leaseStages(runner.token, 1, { taskId: taskB });
    expect(execB!.payload).toMatchObject({ task_id: taskB, stage: "execute" });
    await abortTeamRound(env, roundB.round_id, { status: "needs_human", reason: "operator_stop" }, new Date());
    expect(await getTeamAdmission(env).status()).toEqual({ active: [], queued: [] });
    await putTeamDispatchLimits({});
  });

  it("fails a stage whose admission wait ran out, on the team tick", async () => {
    await putTeamDispatchLimits({ ephemeral_max_active: 1, ephemeral_queue_ttl_ms: 1_000 });
    const taskA = await teamTask(1);
    const taskB = await teamTask(1);
    const roundA = (await startTeamRound(env, taskA, new Date())).state;
    const roundB = (await startTeamRound(env, taskB, new Date())).state;
    expect(roundB.stages[0]!.status).toBe("waiting_admission");
    const summary = await teamTick(env, new Date(Date.now() + 5_000));
    expect(summary).toMatchObject({ admission_expired: 1 });
    const viewB = (await call(`/v1/team/tasks/${taskB}`)).body;
    expect(lastRound(viewB)).toMatchObject({ phase: "needs_human", outcome: { reason: "team_stage_failed" } });
    expect(lastRound(viewB).stages[0]).toMatchObject({ status: "failed", error: { code: "admission_expired" } });
    const turn = (await call(`/v1/tasks/${taskB}/roles`)).body.role_turns[0];
    expect(turn).toMatchObject({ outcome: "failed", failure_edge: "admission", fault_side: "platform", runtime_used: null });
    await abortTeamRound(env, roundA.round_id, { status: "needs_human", reason: "operator_stop" }, new Date());
    await putTeamDispatchLimits({});
  });

  it("reads the team's limits from the dispatch section, with defaults when absent", async () => {
    await putTeamDispatchLimits({});
    expect(await readTeamLimits(db())).toMatchObject({
      ephemeral_max_active: 32,
      role_team_max_in_window: 60,
      team_budget: { max_spawns_per_task: 12, max_turns_per_role: 3 },
    });
  });
});

describe("gray zone", () => {
  it("runs the planner once and goes on as the employee's own run, with the plan, when it finds fewer than 4 independent subtasks", async () => {
    const put = await call("/v1/employees/gray-emp", {
      method: "PUT",
      body: { name: "Gray", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
    });
    expect(put.status).toBe(200);
    const taskId = await teamTask(2, "gray", employee({ id: "gray-emp" }));
    const runner = await createRunner("gray-runner");
    const { state } = await startTeamRound(env, taskId, new Date());
    expect(state.mode).toBe("gray");
    await plan(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, [
      { id: "x" },
      { id: "y" },
      { id: "z", depends_on: ["x"] },
    ]);
    const view = await waitForTeamTask(taskId, (v) => lastRound(v).phase === "working");
    expect(lastRound(view)).toMatchObject({ subtasks: ["x", "y", "z"], regate: { decision: "solo", independent: 1 } });
    // The employee itself works the round, with the planner's subtasks to read.
    const [work] = await leaseStages(runner.token, 1, { taskId });
    expect(work!.kind).toBe("employee_turn");
    expect(work!.payload).toMatchObject({ employee_id: "gray-emp", runtime: "claude", model: "claude-sonnet-4-6", round: 1 });
    const prompt = (work!.payload as any).prompt as string;
    expect(prompt.split("\n")[0]).toBe("# Goal round 1 for Gray");
    expect(prompt).toContain("## The planner's subtasks for this round");
    await completeStage(runner.token, work!, { text: "done", runtime: "claude" });
    await runEvaluator(runner.token, taskId, 3);
    await waitForTeamTask(taskId, (v) => lastRound(v).phase === "accepted");
  });

  it("forms the team on a real decomposition of at least 4 independent subtasks", async () => {
    const taskId = await teamTask(2, "gray");
    const runner = await createRunner("gray-runner-2");
    await startTeamRound(env, taskId, new Date());
    await plan(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, [{ id: "p" }, { id: "q" }, { id: "r" }, { id: "s" }]);
    const executors = await leaseStages(runner.token, 2, { taskId });
    expect(executors.map((j) => j.payload.input.packet_ids).sort()).toEqual([
      ["p", "r"],
      ["q", "s"],
    ]);
    const view = (await call(`/v1/team/tasks/${taskId}`)).body;
    await abortTeamRound(env, lastRound(view).round_id, { status: "needs_human", reason: "operator_stop" }, new Date());
  });
});
