import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { credentials, jobs } from "../../../src/db/schema";
import { openTeamGoal } from "../../../src/team/goals";
import { startTeamRound } from "../../../src/team/round-driver";
import { call, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import {
  completeStage,
  failStage,
  handoff,
  lastRound,
  leaseStages,
  runEvaluator,
  waitForTeamTask,
  type LeasedStage,
} from "../../factories/scripted-runner";
import { db, employee, eventsOf, newTaskId, putTeamConfig, SEED_TEAM } from "../../factories/team";

const TERMINAL = new Set(["accepted", "rejected", "needs_human", "failed", "cancelled"]);
const goal = { title: "Write the onboarding notes", acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "index links both"] };
// The gate is not under test here: `always_team` (test only, seed 002) forms the team whatever the goal measures.
const ALWAYS_TEAM = { gate: "always_team" } as const;
const PLANNER_NARRATIVE = "Planner musing: the onboarding flow is probably in docs/legacy";
const EXECUTOR_PROSE = "I worked really hard on this and it is definitely finished";

async function teamTask(team = SEED_TEAM) {
  await putTeamConfig(team);
  const taskId = newTaskId();
  const opened = await openTeamGoal(db(), { taskId, employee: employee({ team: ALWAYS_TEAM }), goal }, new Date());
  expect(opened).toMatchObject({ team: "frozen", gate: { decision: "team" } });
  return taskId;
}

const receipt = (path: string) => ({ path, state: "exists", bytes: 128, sha256: "3f2a".padEnd(64, "0") });

/** Planner: one subtask packet per file. */
async function runPlanner(runner: string, job: LeasedStage, subtasks: string[]) {
  expect(job.payload).toMatchObject({
    role: "planner",
    stage: "plan",
    runtime: "claude",
    model: "claude-fable-5-1",
    effort: "high",
    effort_argv: ["--effort", "high"],
  });
  for (const s of subtasks) {
    const res = await handoff(
      job.payload.member_token,
      packet(job.payload.task_id, job.payload.round, "planner", "executor", {
        packet_id: s,
        objective: `${PLANNER_NARRATIVE} — write ${s}`,
      }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  await completeStage(runner, job, {
    text: "planned",
    runtime: "claude",
    model: "claude-fable-5-1",
    usage: { input_tokens: 1200, output_tokens: 300 },
  });
}

/** Executor: writes its file, hands off one packet naming it. */
async function runExecutor(runner: string, job: LeasedStage, opts: { fidelityClaim?: "full" | "none" } = {}) {
  expect(job.payload).toMatchObject({
    role: "executor",
    runtime: "codex",
    model: "gpt-5.5",
    effort_argv: ["-c", 'model_reasoning_effort="medium"'],
  });
  const [subtask] = job.payload.input.packet_ids;
  const path = `notes/${subtask}.md`;
  const res = await handoff(
    job.payload.member_token,
    packet(job.payload.task_id, job.payload.round, "executor", "verifier", {
      packet_id: `done-${subtask}-${job.payload.stage}`,
      objective: `Wrote ${path}`,
      findings: [{ claim: `${path} written`, evidence: [path] }],
      artifacts: [{ path }],
      fidelity: opts.fidelityClaim ?? "full",
    }),
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await completeStage(runner, job, {
    text: EXECUTOR_PROSE,
    runtime: "codex",
    model: "gpt-5.5",
    legs: [{ usage: { input_tokens: 500 } }, { usage: { input_tokens: 200, output_tokens: 40 } }],
    evidence: { native_tool_events: 2 },
    tool_activity: [{ name: "file_change", ok: 1, err: 0 }],
    artifact_receipts: [receipt(path)],
  });
}

/** The utility role's synthesis: read-only, its text is what the acceptance path reads. */
async function runSynthesis(runner: string, taskId: string, text = "Synthesis: notes written") {
  const [job] = await leaseStages(runner, 1, { taskId });
  expect(job!.payload).toMatchObject({ role: "utility", stage: "synthesize", runtime: "claude", model: "claude-haiku-4-5" });
  await completeStage(runner, job!, { text, runtime: "claude", model: "claude-haiku-4-5" });
  return job!;
}

describe("a team round through the dispatch queue, the runner inbox and a scripted runner", () => {
  beforeAll(async () => {
    // These rounds are started from code for employees the registry lacks: the evaluator is named.
    const res = await call("/v1/config/goals", { method: "PUT", body: { evaluator: { runtime: "claude", model: "claude-judge-1" } } });
    expect(res.status).toBe(200);
  });

  it("plans, fans out, synthesizes, verifies PASS and is accepted by the evaluator; the verifier sees criteria, executor packets, tool activity and receipts, never the planner's narrative", async () => {
    const taskId = await teamTask();
    const runner = await createRunner("scripted-1");
    const { state } = await startTeamRound(env, taskId, new Date());
    expect(state).toMatchObject({ phase: "planning", plan: { executors: 2, repair: true }, degrade_steps: [] });

    const [plan] = await leaseStages(runner.token, 1, { taskId });
    expect(plan!.kind).toBe("team_stage");
    expect(plan!.payload.input.prompt).toContain("notes/a.md exists");
    await runPlanner(runner.token, plan!, ["a", "b"]);

    const executors = await leaseStages(runner.token, 2, { taskId });
    expect(executors.map((j) => j.payload.input.packet_ids).sort()).toEqual([["a"], ["b"]]);
    expect(executors[0]!.payload.input.prompt).toContain("## Constraints");
    // Executors do get their subtask packets (the planner's words); the verifier below must not.
    expect(executors[0]!.payload.input.prompt).toContain("Planner musing");
    await Promise.all(executors.map((j) => runExecutor(runner.token, j)));
    const synth = await runSynthesis(runner.token, taskId, "Synthesis: a and b written");
    expect(synth.payload.input.prompt).toContain("Wrote notes/a.md");

    const [verify] = await leaseStages(runner.token, 1, { taskId });
    expect(verify!.payload).toMatchObject({
      role: "verifier",
      runtime: "antigravity",
      model: "gemini-3.7-flash",
      input: { output_schema: "verdict" },
    });
    const prompt = verify!.payload.input.prompt;
    expect(prompt).toContain("index links both");
    expect(prompt).toContain("Wrote notes/a.md");
    expect(prompt).toContain("file_change: 2 ok, 0 err");
    expect(prompt).toContain("notes/a.md 128B sha256=3f2a0000… exists");
    expect(prompt).not.toContain("Planner musing");
    expect(prompt).not.toContain(EXECUTOR_PROSE);
    // The verifier never reads the synthesis either: it judges packets and evidence.
    expect(prompt).not.toContain("Synthesis: a and b written");
    await completeStage(runner.token, verify!, { runtime: "antigravity", model: "gemini-3.7-flash", verdict: "PASS", reasons: [] });

    // The acceptance path: the evaluator reads the synthesis, the receipts and the verifier's verdict.
    const evaluator = await runEvaluator(runner.token, taskId, 3);
    expect(evaluator.payload).toMatchObject({ runtime: "claude", model: "claude-judge-1" });
    const judging = (evaluator.payload as any).prompt as string;
    expect(judging.split("\n")[0]).toBe("# Role: evaluator");
    expect(judging).toContain("Synthesis: a and b written");
    expect(judging).toContain("notes/a.md 128B sha256=3f2a0000… exists");
    expect(judging).toContain("## The team's verifier said\nPASS");

    const view = await waitForTeamTask(taskId, (v) => lastRound(v).phase === "accepted");
    expect(lastRound(view)).toMatchObject({
      verdict: "PASS",
      outcome: { status: "accepted", reason: "acceptance_passed" },
      evaluation: { source: "evaluator", accepted: true, unmet: [], stage_one: "passed" },
    });
    // Synthesis and evaluation spawn no member: the budget counts planner, two executors, verifier.
    expect(view.budget).toMatchObject({ spent: 4, held: 0, remaining: 8 });

    const roles = (await call(`/v1/tasks/${taskId}/roles`)).body;
    expect(roles.chain).toEqual({ ok: true });
    expect(roles.role_turns.map((r: any) => r.role).sort()).toEqual([
      "evaluator",
      "executor",
      "executor",
      "planner",
      "utility",
      "verifier",
    ]);
    const exec = roles.role_turns.find((r: any) => r.role === "executor");
    expect(exec).toMatchObject({
      requested_runtime: "codex",
      runtime_used: "codex",
      failover: false,
      evidence_grade: "full",
      usage: { input_tokens: 700, output_tokens: 40 },
      usage_legs: 2,
    });
    const ver = roles.role_turns.find((r: any) => r.role === "verifier");
    expect(ver).not.toHaveProperty("usage");

    const cost = (await call(`/v1/cost/by-role?episode_id=${taskId}`)).body.by_role;
    expect(cost.find((r: any) => r.role === "verifier")).toMatchObject({ usage: "unknown", stages_without_usage: 1 });
    expect(cost.find((r: any) => r.role === "planner")).toMatchObject({ usage: { input_tokens: 1200, output_tokens: 300 } });

    // Member tokens ended with the round, and the D1 job rows never held them.
    const stageJobs = await db().select().from(jobs).where(eq(jobs.ownerId, state.round_id)).all();
    expect(stageJobs.map((j) => j.kind).sort()).toEqual(["team_stage", "team_stage", "team_stage", "team_stage", "team_stage", "utility"]);
    for (const j of stageJobs.filter((j) => j.kind === "team_stage")) expect(j.payload.member_token).toBe("[redacted]");
    const late = await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: "late" }));
    expect(late.status).toBe(401);
    const tokens = await db().select().from(credentials).where(eq(credentials.kind, "member")).all();
    expect(tokens.filter((t) => t.name.startsWith(`team:${state.round_id}:`)).every((t) => t.revokedAt !== null)).toBe(true);

    const trail = (await eventsOf("team_", taskId)).map((e) => e.type);
    expect(trail).toEqual(
      expect.arrayContaining([
        "team_spec_frozen",
        "team_round_started",
        "team_stage_dispatched",
        "team_stage_completed",
        "team_round_accepted",
      ]),
    );
    expect((await eventsOf("goal_round_evaluated", taskId))[0]!.payload).toMatchObject({ accepted: true, met: 3, of: 3, unmet: [] });
  });

  it("gives one repair pass after a verifier FAIL, then the acceptance path judges the repaired output", async () => {
    const taskId = await teamTask({ ...SEED_TEAM, executor_fanout: 1 });
    const runner = await createRunner("scripted-2");
    await startTeamRound(env, taskId, new Date());
    await runPlanner(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, ["a"]);
    await runExecutor(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!);
    await runSynthesis(runner.token, taskId);
    const [verify] = await leaseStages(runner.token, 1, { taskId });
    const gap = await handoff(
      verify!.payload.member_token,
      packet(taskId, 1, "verifier", "executor", {
        packet_id: "gap-b",
        objective: "notes/b.md is missing",
        open_questions: ["where is b?"],
      }),
    );
    expect(gap.status).toBe(201);
    await completeStage(runner.token, verify!, { verdict: "FAIL", reasons: ["notes/b.md missing"] });

    const [repair] = await leaseStages(runner.token, 1, { taskId });
    expect(repair!.payload).toMatchObject({ role: "executor", stage: "repair", runtime: "codex" });
    expect(repair!.payload.input.packet_ids).toEqual(["a", "gap-b"]);
    expect(repair!.payload.input.prompt).toContain("notes/b.md missing");
    await runExecutor(runner.token, repair!);
    const evaluator = await runEvaluator(runner.token, taskId, 3, [3]);
    expect((evaluator.payload as any).prompt).toContain("A repair pass ran after it: judge the repaired work");

    const view = await waitForTeamTask(taskId, (v) => TERMINAL.has(lastRound(v).phase));
    expect(lastRound(view)).toMatchObject({
      phase: "rejected",
      verdict: "FAIL",
      repaired: true,
      outcome: { reason: "criteria_unmet" },
      evaluation: { stage_one: "repaired", unmet: [3] },
    });
    expect(view.budget.spent).toBe(4);
  });

  it("fails the stage on a failed spawn (no vendor failover) and parks the round in needs_human with team_stage_failed", async () => {
    const taskId = await teamTask({ ...SEED_TEAM, executor_fanout: 1 });
    const runner = await createRunner("scripted-3");
    await startTeamRound(env, taskId, new Date());
    await runPlanner(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, ["a"]);
    const [exec] = await leaseStages(runner.token, 1, { taskId });
    await failStage(runner.token, exec!, "not_logged_in", "codex: not logged in");
    // The failed executor gets its replica (same runtime, same subtask), which fails the same way.
    const [replica] = await leaseStages(runner.token, 1, { taskId });
    expect(replica!.payload).toMatchObject({ role: "executor", stage: "execute", runtime: "codex", input: { packet_ids: ["a"] } });
    await failStage(runner.token, replica!, "not_logged_in", "codex: not logged in");

    const view = await waitForTeamTask(taskId, (v) => lastRound(v).phase === "needs_human");
    expect(lastRound(view).outcome).toMatchObject({ reason: "team_stage_failed" });
    expect(await leaseStages(runner.token, 1, { taskId, timeoutMs: 2_500 })).toEqual([]);
    const failedEvents = await eventsOf("team_stage_failed", taskId);
    expect(failedEvents).toHaveLength(2);
    expect(failedEvents[0]!.payload).toMatchObject({
      role: "executor",
      runtime: "codex",
      model: "gpt-5.5",
      error: { code: "not_logged_in" },
    });
    const turns = (await call(`/v1/tasks/${taskId}/roles`)).body.role_turns.filter((r: any) => r.role === "executor");
    expect(turns).toHaveLength(2);
    expect(turns[0]).toMatchObject({ outcome: "failed", failure_edge: "spawn", fault_side: "runtime", runtime_used: null, failover: null });
    // The replica was charged: planner, executor, replica.
    expect(view.budget.spent).toBe(3);
  });

  it("records what ran for a stage whose CLI failed after it started, and refuses a malformed report without touching the job", async () => {
    const taskId = await teamTask({ ...SEED_TEAM, executor_fanout: 1 });
    const runner = await createRunner("scripted-ran");
    await startTeamRound(env, taskId, new Date());
    await runPlanner(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, ["a"]);
    const [exec] = await leaseStages(runner.token, 1, { taskId });
    const bad = await call(`/v1/runner/jobs/${exec!.job_id}/fail`, {
      token: runner.token,
      body: {
        lease_id: exec!.lease_id,
        error: { code: "timeout", message: "m", ran: { runtime: "codex", guessed: true } },
        retryable: false,
      },
    });
    expect(bad.status).toBe(422);
    expect((await call(`/v1/admin/jobs/${exec!.job_id}`)).body).toMatchObject({ status: "leased" });

    await failStage(runner.token, exec!, "timeout", "codex (model gpt-5.5) ran out of time", false, {
      runtime: "codex",
      provider: "openai",
    });
    await failStage(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, "timeout", "again");
    await waitForTeamTask(taskId, (v) => lastRound(v).phase === "needs_human");
    const turn = (await call(`/v1/tasks/${taskId}/roles`)).body.role_turns.find((r: any) => r.role === "executor");
    // The stream named no model, so none is recorded: the requested one is not who answered.
    expect(turn).toMatchObject({ outcome: "failed", runtime_used: "codex", provider: "openai", response_model: null, failover: false });
  });

  it("parks the task in needs_human when the planner hands off no packet", async () => {
    const taskId = await teamTask();
    const runner = await createRunner("scripted-4");
    await startTeamRound(env, taskId, new Date());
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    await completeStage(runner.token, plan!, { text: "I think we should just do it all at once." });
    const view = await waitForTeamTask(taskId, (v) => lastRound(v).phase === "needs_human");
    expect(lastRound(view).outcome).toMatchObject({ reason: "planner_no_packets", pause_class: "no_progress" });
  });

  it("corrects a member's claimed fidelity to what was observed and audits it", async () => {
    const taskId = await teamTask({ ...SEED_TEAM, executor_fanout: 1 });
    const runner = await createRunner("scripted-5");
    await startTeamRound(env, taskId, new Date());
    await runPlanner(runner.token, (await leaseStages(runner.token, 1, { taskId }))[0]!, ["a"]);
    const [exec] = await leaseStages(runner.token, 1, { taskId });
    const res = await handoff(
      exec!.payload.member_token,
      packet(taskId, 1, "executor", "verifier", { packet_id: "claims-full", fidelity: "full" }),
    );
    expect(res.status).toBe(201);
    await completeStage(runner.token, exec!, { text: "done" }); // no evidence observed at all
    await runSynthesis(runner.token, taskId);
    const [verify] = await leaseStages(runner.token, 1, { taskId });
    expect(verify!.payload.input.prompt).toContain("tool activity window unknown");
    const [audit] = await eventsOf("team_packet_fidelity_corrected", taskId);
    expect(audit!.payload).toMatchObject({ packet_id: "claims-full", claimed: "full", observed: "none" });
    await completeStage(runner.token, verify!, { verdict: "PASS" });
    await runEvaluator(runner.token, taskId, 3);
    await waitForTeamTask(taskId, (v) => lastRound(v).phase === "accepted");
  });

  it("fails a round whose stored spec no longer holds before it spends any spawn", async () => {
    const taskId = await teamTask();
    await env.DB.prepare(`UPDATE team_specs SET spec = json_set(spec, '$.roles.verifier.family', 'openai') WHERE task_id = ?`)
      .bind(taskId)
      .run();
    const { state } = await startTeamRound(env, taskId, new Date());
    expect(state).toMatchObject({ phase: "failed", stages: [], outcome: { reason: "frozen_spec_family_violation" } });
    expect(state.outcome!.detail).toContain("[team.roles.verifier]");
    const [event] = await eventsOf("team_round_failed", taskId);
    expect(event!.payload).toMatchObject({ reason: "frozen_spec_family_violation", role: "verifier" });
    expect((await call(`/v1/team/tasks/${taskId}`)).body.budget).toMatchObject({ spent: 0 });
  });
});
