import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inboxJob } from "../../factories/inbox-pools";
import { call, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import { completeStage, failStage, handoff, leaseStages, runEvaluator, type LeasedStage } from "../../factories/scripted-runner";
import { eventsOf, putTeamConfig, putTeamDispatchLimits, SEED_TEAM } from "../../factories/team";

/**
 * Team-as-Agent over HTTP only: employees with their own [team], goals, the task view and its settle.
 * The gate's own measurement is tested in gate-measure*.test.ts; the rounds here run under
 * `gate = "always_team"` (test only, seed 002), since this goal measures solo (it has a dependency hub).
 */
const GOAL = {
  title: "Write the onboarding notes",
  acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "index links both"],
};
const TEAM = { ...SEED_TEAM, gate: "always_team" as const };

async function putEmployee(id: string, fields: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, ...fields },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function goal(employee: string, body: Record<string, unknown> = GOAL) {
  return call(`/v1/employees/${employee}/goals`, { body });
}

async function taskOf(taskId: string, done: (t: any) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let task: any;
  while (Date.now() < deadline) {
    task = (await call(`/v1/tasks/${taskId}`)).body;
    if (done(task)) return task;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`task ${taskId} never got there: ${JSON.stringify(task)}`);
}

/** One team round: planner, one executor, the utility's synthesis, the verifier (and repair on FAIL), the evaluator. */
async function runRound(runner: string, taskId: string, verdict: "PASS" | "FAIL", unmet: number[] = [], round = 1) {
  const [plan] = await leaseStages(runner, 1, { taskId });
  expect(plan!.payload.round).toBe(round);
  expect((await handoff(plan!.payload.member_token, packet(taskId, round, "planner", "executor", { packet_id: "a" }))).status).toBe(201);
  await completeStage(runner, plan!, { text: "planned" });
  const exec = (await leaseStages(runner, 1, { taskId }))[0] as LeasedStage;
  await completeStage(runner, exec, { text: "done", evidence: { native_tool_events: 1 }, tool_activity: [], artifact_receipts: [] });
  const [synth] = await leaseStages(runner, 1, { taskId });
  expect(synth!.payload).toMatchObject({ role: "utility", stage: "synthesize" });
  await completeStage(runner, synth!, { text: "Synthesis: a done" });
  const [verify] = await leaseStages(runner, 1, { taskId });
  await completeStage(runner, verify!, { verdict, reasons: verdict === "FAIL" ? ["notes/b.md missing"] : [] });
  if (verdict === "FAIL") {
    const [repair] = await leaseStages(runner, 1, { taskId });
    await completeStage(runner, repair!, { text: "repaired" });
  }
  await runEvaluator(runner, taskId, GOAL.acceptance_criteria.length, unmet);
}

describe("employees with their own [team]", () => {
  it("stores the team field as written, shows the effective cascade, and drops it on a PUT without it", async () => {
    await putTeamConfig(SEED_TEAM);
    const put = await putEmployee("aiko", { team: { executor_fanout: 5, roles: { executor: { effort: "high" } } } });
    expect(put.team).toEqual({ executor_fanout: 5, roles: { executor: { effort: "high" } } });
    const got = (await call("/v1/employees/aiko")).body;
    expect(got.effective.team).toMatchObject({
      enabled: true,
      executor_fanout: 3,
      valid: true,
      roles: { executor: { runtime: "codex", model: "gpt-5.5", effort: "high" } },
      reports: [expect.objectContaining({ token: "executor_fanout_clamped", clamped_to: 3 })],
    });
    const again = await putEmployee("aiko");
    expect(again).not.toHaveProperty("team");
    expect(again.effective.team.executor_fanout).toBe(2);
  });

  it("refuses an invalid team field with 422 and changes nothing", async () => {
    await putEmployee("bo");
    const res = await call("/v1/employees/bo", {
      method: "PUT",
      body: { name: "Bo", runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, team: { roles: { planner: { vendor: "x" } } } },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
    expect((await call("/v1/employees/bo")).body.revision).toBe(1);
  });
});

describe("POST /v1/employees/:id/goals", () => {
  it("creates the goal task, decides the gate, freezes the spec and starts the round; GET /v1/tasks/:id shows the team side", async () => {
    await putTeamConfig(TEAM);
    await putEmployee("cai", { capabilities: { allowed_tools: ["Read", "Grep"], denied_tools: ["Bash"] } });
    const res = await goal("cai");
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      assigned_to: "cai",
      routed_by: "hierarchy",
      gate: { decision: "team", reason: "gate_always_team", signals: { held: 1 }, measured: { hubs: [{ criterion: 2 }] } },
      team_spec: { roles: { planner: { runtime: "claude" }, executor: { runtime: "codex" }, verifier: { runtime: "antigravity" } } },
      round: { round: 1, phase: "planning" },
    });
    const task = (await call(`/v1/tasks/${res.body.task_id}`)).body;
    expect(task).toMatchObject({
      task_id: res.body.task_id,
      mode: "goal",
      status: "assigned",
      acceptance_criteria: GOAL.acceptance_criteria,
      gate: { decision: "team" },
      team_spec: { executor_fanout: 2 },
      rounds: [expect.objectContaining({ round_no: 1, phase: "planning" })],
      team_budget: expect.objectContaining({ spent: 1 }),
    });
    expect(task).not.toHaveProperty("role_turns"); // nothing ended yet

    // The runner gets the employee's effective tools with the stage.
    const runner = await createRunner("goals-1");
    const [plan] = await leaseStages(runner.token, 1, { taskId: res.body.task_id });
    expect(plan!.payload).toMatchObject({
      employee_id: "cai",
      employee: { name: "Employee cai", capabilities: { allowed_tools: ["Read", "Grep"], denied_tools: ["Bash"] }, sandbox_enabled: false },
    });
    expect(JSON.parse((plan!.payload as any).employee.config_json)).toMatchObject({
      runtime: "claude",
      model: { preferred: "claude-sonnet-4-6" },
    });
    await completeStage(runner.token, plan!, { text: "no plan" });
  });

  it("settles the goal task done when the acceptance path accepts, and starts round 2 when it rejects the repaired work", async () => {
    await putTeamConfig({ ...TEAM, executor_fanout: 1 });
    await putEmployee("dai");
    const runner = await createRunner("goals-2");

    const passed = (await goal("dai")).body.task_id;
    await runRound(runner.token, passed, "PASS");
    const done = await taskOf(passed, (t) => t.status !== "assigned");
    expect(done).toMatchObject({ status: "done", retry_count: 0, settled_by: "goal_loop", goal_loop: { state: "ended", rounds_used: 1 } });
    expect(done.role_turns.map((r: any) => r.role)).toEqual(["planner", "executor", "utility", "verifier", "evaluator"]);
    expect((await eventsOf("goal_accepted", passed))[0]!.payload).toMatchObject({ status: "done", rounds: 1 });

    const failed = (await goal("dai")).body.task_id;
    await runRound(runner.token, failed, "FAIL", [2]);
    const next = await taskOf(failed, (t) => t.rounds.length === 2);
    expect(next).toMatchObject({
      status: "assigned",
      goal_loop: { state: "working", rounds_used: 2, last_evaluation: { round: 1, unmet: [2] } },
    });
    expect(next.rounds[0]).toMatchObject({ phase: "rejected", verdict: "FAIL", repaired: true, evaluation: { stage_one: "repaired" } });
    expect(next.rounds[1]).toMatchObject({ mode: "team", phase: "planning" });
    // Round 2 re-checked the frozen spec before spending a spawn, and its planner aims at the gap.
    const started = (await eventsOf("team_round_started", failed)).find((e) => e.payload.round === 2);
    expect(started!.payload).toMatchObject({ spec_recheck: "ok" });
    const [plan2] = await leaseStages(runner.token, 1, { taskId: failed });
    expect(plan2!.payload.input.prompt).toContain("## Still unmet after round 1\n- 2. notes/b.md exists — no evidence");
    expect((await call(`/v1/tasks/${failed}/settle`, { body: { status: "failed" } })).status).toBe(200);
  });

  it("lets the team tick settle a goal task whose round ended without its settle (the process stopped in between)", async () => {
    await putTeamConfig({ ...TEAM, executor_fanout: 1 });
    await putEmployee("dan");
    const runner = await createRunner("goals-backstop");
    const taskId = (await goal("dan")).body.task_id;
    await runRound(runner.token, taskId, "PASS");
    await taskOf(taskId, (t) => t.status === "done");
    // As if the round's end had landed but not the settle that follows it.
    await env.DB.prepare("UPDATE tasks SET status = 'assigned', settled_at = NULL, settled_by = NULL WHERE id = ?").bind(taskId).run();
    const tick = await call("/v1/admin/ticks/team", { method: "POST" });
    expect(tick.status).toBe(200);
    expect(tick.body.summary.tasks_settled).toBe(1);
    expect((await call(`/v1/tasks/${taskId}`)).body).toMatchObject({ status: "done", settled_by: "goal_loop" });
    expect((await call("/v1/admin/ticks/team", { method: "POST" })).body.summary.tasks_settled).toBe(0);
  });

  it("cancels the round of a goal task an operator settles mid-round: tokens refused, nothing more launched, the operator's settle kept", async () => {
    await putTeamConfig({ ...TEAM, executor_fanout: 1 });
    await putEmployee("kai");
    const runner = await createRunner("goals-cancel");
    const taskId = (await goal("kai")).body.task_id;
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    const token = plan!.payload.member_token as string;
    expect((await call("/v1/team/member", { token })).body).toMatchObject({ live: true });

    const settle = await call(`/v1/tasks/${taskId}/settle`, { body: { status: "failed" } });
    expect(settle.status).toBe(200);
    const task = (await call(`/v1/tasks/${taskId}`)).body;
    expect(task.status).toBe("failed");
    expect(task.settled_by).not.toBe("goal_loop");
    expect(task.rounds[0]).toMatchObject({ phase: "cancelled", outcome: { status: "cancelled", reason: "task_settled" } });
    expect((await eventsOf("team_round_cancelled", taskId)).length).toBe(1);
    // The running member's runner learns the round is over; its handoffs are refused.
    expect((await call("/v1/team/member", { token })).status).toBe(401);
    expect((await handoff(token, packet(taskId, 1, "planner", "executor", { packet_id: "late" }))).status).toBe(401);

    // Its stage still ends (the runner stopped it); that is recorded, and no executor is launched.
    await failStage(runner.token, plan!, "round_ended", "planner stage stopped: its round ended");
    const after = await taskOf(taskId, (t) => t.role_turns?.length === 1);
    expect(after.rounds[0].stages.map((st: any) => st.kind)).toEqual(["plan"]);
    expect(after).toMatchObject({ status: "failed" });
    expect(await leaseStages(runner.token, 1, { taskId, timeoutMs: 3_000 })).toEqual([]);
  });

  it("withdraws the stage jobs no runner took yet when the round is cancelled: dead with round_ended, recorded, never leased", async () => {
    await putTeamConfig({ ...TEAM, executor_fanout: 1 });
    await putEmployee("kaz");
    const runner = await createRunner("goals-withdraw");
    const taskId = (await goal("kaz")).body.task_id;
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    expect((await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: "a" }))).status).toBe(201);
    await completeStage(runner.token, plan!, { text: "planned" });
    // The executor's job is dispatched and reaches the inbox, where no runner asks for it.
    const dispatched = await taskOf(taskId, (t) => t.rounds[0].stages.some((st: any) => st.kind === "execute" && st.job_id));
    const jobId = dispatched.rounds[0].stages.find((st: any) => st.kind === "execute").job_id as string;
    const deadline = Date.now() + 20_000;
    while ((await inboxJob(env, jobId))?.status !== "queued" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect((await inboxJob(env, jobId))?.status).toBe("queued");

    expect((await call(`/v1/tasks/${taskId}/settle`, { body: { status: "failed" } })).status).toBe(200);
    expect((await inboxJob(env, jobId))?.status).toBe("dead");
    const job = (await call(`/v1/admin/jobs/${jobId}`)).body;
    expect(job).toMatchObject({ status: "dead", error: { code: "round_ended" } });
    // The stage is recorded like any stage that ended without running, and nothing else is launched.
    const after = await taskOf(taskId, (t) => t.role_turns?.length === 2);
    expect(after.role_turns[1]).toMatchObject({ stage: "execute", outcome: "failed", failure_edge: "run", fault_side: "platform" });
    expect(after.rounds[0]).toMatchObject({ phase: "cancelled" });
    expect(await leaseStages(runner.token, 1, { taskId, timeoutMs: 3_000 })).toEqual([]);
  });

  it("lets the team tick cancel a round whose goal task was settled without it (the process stopped in between)", async () => {
    await putTeamConfig({ ...TEAM, executor_fanout: 1 });
    await putEmployee("kei");
    const taskId = (await goal("kei")).body.task_id;
    // As if the operator's settle had landed but not the cancel that follows it.
    await env.DB.prepare("UPDATE tasks SET status = 'needs_human', settled_at = ? WHERE id = ?")
      .bind(new Date().toISOString(), taskId)
      .run();
    const tick = await call("/v1/admin/ticks/team", { method: "POST" });
    expect(tick.body.summary.rounds_cancelled).toBe(1);
    expect((await call(`/v1/tasks/${taskId}`)).body.rounds[0]).toMatchObject({ phase: "cancelled" });
    expect((await call("/v1/admin/ticks/team", { method: "POST" })).body.summary.rounds_cancelled).toBe(0);
  });

  it("parks the task in needs_human with the round's pause class when the planner hands off nothing", async () => {
    await putTeamConfig(TEAM);
    await putEmployee("eri");
    const runner = await createRunner("goals-3");
    const taskId = (await goal("eri")).body.task_id;
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    await completeStage(runner.token, plan!, { text: "I would rather do it myself" });
    expect(await taskOf(taskId, (t) => t.status !== "assigned")).toMatchObject({ status: "needs_human", pause_class: "no_progress" });
  });

  it("works a solo goal as the employee's own run: a solo round starts, and the task shows the gate that decided it", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("fumi");
    const res = await goal("fumi");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      gate: { decision: "solo", reason: "signals_solo" },
      round: { round: 1, mode: "solo", phase: "working" },
    });
    const task = (await call(`/v1/tasks/${res.body.task_id}`)).body;
    expect(task).toMatchObject({ status: "assigned", gate: { decision: "solo" }, goal_loop: { state: "working", rounds_budget: 5 } });
    expect(task.rounds).toEqual([
      expect.objectContaining({ mode: "solo", phase: "working", stages: [expect.objectContaining({ kind: "work", role: "employee" })] }),
    ]);
    expect(task).not.toHaveProperty("team_budget");
    expect((await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } })).status).toBe(200);
  });

  it("with the team switched off for the employee records nothing of the team: only the employee's own rounds", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("gin", { team: { enabled: false } });
    const res = await goal("gin");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ gate: { decision: "solo", reason: "team_disabled" }, round: { mode: "solo" } });
    const task = (await call(`/v1/tasks/${res.body.task_id}`)).body;
    for (const field of ["gate", "team_spec", "team_budget", "team_refused"]) expect(task).not.toHaveProperty(field);
    expect(task.rounds.map((r: any) => r.mode)).toEqual(["solo"]);
    expect(await eventsOf("team_", res.body.task_id)).toEqual([]);
    expect((await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } })).status).toBe(200);
  });

  it("answers an explicitly enabled but invalid team with a visible refusal, and says the goal runs solo", async () => {
    await putTeamConfig({
      enabled: true,
      gate: "always_team",
      roles: { executor: { runtime: "codex", model: "gpt-5.5" }, verifier: { runtime: "codex", model: "gpt-5.5-mini" } },
    });
    await putEmployee("hana");
    const res = await goal("hana");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      gate: { decision: "solo", reason: "verifier_same_family", signals: { held: 1 } },
      team_refused: { reason: "verifier_same_family", role: "verifier" },
      round: { mode: "solo" },
    });
    expect((await call(`/v1/tasks/${res.body.task_id}`)).body).toMatchObject({
      gate: { decision: "solo", reason: "verifier_same_family" },
      team_refused: { reason: "verifier_same_family", gate: { decision: "team", reason: "gate_always_team" } },
    });
    expect((await eventsOf("team_refused", res.body.task_id)).length).toBe(1);
    expect((await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } })).status).toBe(200);
  });

  it("warns at spec validation when the live-scaffold limit is below max_concurrent × iteration_cap × roles, with the seed's arithmetic", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("cap");
    const res = await goal("cap");
    expect(res.status).toBe(201);
    const warning = res.body.reports.find((r: any) => r.token === "ephemeral_capacity_short");
    expect(warning).toMatchObject({ needed: 45, limit: 32 });
    expect(warning.detail).toContain("max_concurrent × iteration_cap × roles = 3 × 5 × 3 = 45");
    const [frozen] = await eventsOf("team_spec_frozen", res.body.task_id);
    expect(frozen!.payload.warnings).toEqual([expect.objectContaining({ token: "ephemeral_capacity_short", needed: 45 })]);
    await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } });

    await putTeamDispatchLimits({ ephemeral_max_active: 45 });
    const roomy = await goal("cap");
    expect((roomy.body.reports ?? []).map((r: any) => r.token)).not.toContain("ephemeral_capacity_short");
    await call(`/v1/tasks/${roomy.body.task_id}/settle`, { body: { status: "failed" } });
    await putTeamDispatchLimits({});
  });

  it("refuses bad input and unknown employees without creating anything", async () => {
    const before = (await eventsOf("task.created")).length;
    expect((await goal("nobody")).status).toBe(404);
    await putEmployee("ivy");
    const bad = await goal("ivy", { ...GOAL, signals: { independent_items: -1 }, extra: true });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe("validation_failed");
    expect((await call("/v1/employees/ivy/goals", { token: (await createRunner("not-a-manager")).token, body: GOAL })).status).toBe(403);
    expect((await eventsOf("task.created")).length).toBe(before);
  });

  it("answers 404 for the roles of a task nobody knows", async () => {
    const res = await call("/v1/tasks/task_ffffffffffffffff/roles");
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("not_found");
  });
});
