import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { continueLoop } from "../../../src/team/goal-loop";
import { FROZEN_GOAL_MAX_BYTES } from "../../../src/tasks/frozen-goal";
import { call, createRunner } from "../../factories";
import { completeStage, jobOfTask, leaseStages, runEvaluator, type LeasedStage } from "../../factories/scripted-runner";
import { eventsOf } from "../../factories/team";

/**
 * The goal loop over HTTP, on an install that never wrote `[team]`: every goal and plain task is
 * worked by the employee itself, round after round, and judged on the acceptance path, with a
 * scripted runner playing the employee's runs and the evaluator.
 */
const CRITERIA = ["notes/a.md exists", "notes/b.md exists", "index.md links both"];
const GOAL = { title: "Write the onboarding notes", acceptance_criteria: CRITERIA };

async function putEmployee(id: string, fields: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, ...fields },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function taskOf(taskId: string, done: (t: any) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let task: any;
  while (Date.now() < deadline) {
    task = (await call(`/v1/tasks/${taskId}`)).body;
    if (done(task)) return task;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `task ${taskId} never got there: ${JSON.stringify(task?.goal_loop)} ${JSON.stringify(task?.rounds?.map((r: any) => r.phase))}`,
  );
}

const receipt = (path: string, state = "exists") => ({
  path,
  state,
  ...(state === "exists" ? { bytes: 12, sha256: "ab".repeat(32) } : {}),
});

/** The employee's own run of the task's current round: its job is an `employee_turn`. */
async function runWork(runner: string, taskId: string, files: string[], text = "Wrote the notes.") {
  const [job] = await leaseStages(runner, 1, { taskId });
  expect(job!.kind).toBe("employee_turn");
  await completeStage(runner, job!, {
    text,
    runtime: "claude",
    model: "claude-sonnet-4-6",
    artifact_receipts: files.map((f) => receipt(f)),
  });
  return job! as LeasedStage & { payload: any };
}

describe("a solo goal, worked by the employee", () => {
  it("runs the employee on its own runtime in its workspace, then settles done on the acceptance path without anyone touching it", async () => {
    await putEmployee("aiko", { capabilities: { allowed_tools: ["Read", "Write"], denied_tools: ["Bash"] } });
    const runner = await createRunner("loop-1");
    const res = await call("/v1/employees/aiko/goals", { body: GOAL });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      gate: { decision: "solo", reason: "signals_solo" },
      round: { round: 1, mode: "solo", phase: "working" },
    });
    const taskId = res.body.task_id as string;

    const work = await runWork(runner.token, taskId, ["notes/a.md", "notes/b.md", "index.md"]);
    expect(work.payload).toMatchObject({
      runtime: "claude",
      model: "claude-sonnet-4-6",
      employee_id: "aiko",
      employee: {
        name: "Employee aiko",
        capabilities: { allowed_tools: ["Read", "Write"], denied_tools: ["Bash"] },
        sandbox_enabled: false,
      },
      purpose: "goal_round",
      task_id: taskId,
      round: 1,
    });
    const prompt = work.payload.prompt as string;
    expect(prompt.split("\n")[0]).toBe("# Goal round 1 for Employee aiko");
    expect(prompt).toContain("## Acceptance criteria (frozen)\n1. notes/a.md exists\n2. notes/b.md exists\n3. index.md links both");
    expect(work.payload).not.toHaveProperty("recheck_paths");

    const evaluator = await runEvaluator(runner.token, taskId, 3);
    const judging = (evaluator.payload as any).prompt as string;
    expect(evaluator.payload).toMatchObject({ runtime: "claude", model: "claude-sonnet-4-6", output_schema: "acceptance" });
    expect(judging).toContain("notes/b.md 12B sha256=abababab… exists");
    expect(judging).toContain("## Round 1 output\nWrote the notes.");

    const task = await taskOf(taskId, (t) => t.status !== "assigned");
    expect(task).toMatchObject({
      status: "done",
      retry_count: 0,
      settled_by: "goal_loop",
      goal_loop: { state: "ended", rounds_used: 1, last_evaluation: { accepted: true, met: 3, of: 3 } },
    });
    expect(task.rounds).toEqual([expect.objectContaining({ mode: "solo", phase: "accepted" })]);
    expect(task.role_turns.map((r: any) => [r.role, r.stage, r.outcome])).toEqual([
      ["employee", "work", "completed"],
      ["evaluator", "evaluate", "completed"],
    ]);
    expect((await eventsOf("goal_accepted", taskId))[0]!.payload).toMatchObject({ status: "done", rounds: 1, rounds_budget: 5 });
  });

  it("refuses a team quietly on an install that never configured [team]: the answer says solo, and nothing anywhere mentions a refusal", async () => {
    await putEmployee("quiet");
    // A goal the gate would give a team's chance (4 independent files: gray as measured, the caller
    // claiming more changes nothing): without [team] it stays solo, quietly.
    const four = ["notes/a.md", "notes/b.md", "notes/c.md", "notes/d.md"].map((f) => `${f} exists`);
    const claimed = { independent_items: 9, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true };
    const res = await call("/v1/employees/quiet/goals", { body: { title: GOAL.title, acceptance_criteria: four, signals: claimed } });
    expect(res.status).toBe(201);
    expect(res.body.gate).toMatchObject({
      decision: "solo",
      reason: "team_not_configured",
      signals: { held: 2, volume: { holds: true }, long_horizon: { holds: true } },
      measured: { items: [{ artifact: "notes/a.md" }, {}, {}, {}], hints: { applied: [] } },
    });
    expect(res.body).not.toHaveProperty("team_refused");
    expect(res.body.round).toMatchObject({ mode: "solo" });
    const task = (await call(`/v1/tasks/${res.body.task_id}`)).body;
    for (const field of ["team_refused", "gate", "team_spec", "team_budget"]) expect(task).not.toHaveProperty(field);
    expect(await eventsOf("team_", res.body.task_id)).toEqual([]);
    expect((await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } })).status).toBe(200);
  });

  it("works a plain task the same way, and never picks up a manual one", async () => {
    await putEmployee("plain");
    const runner = await createRunner("loop-plain");
    const manual = await call("/v1/tasks", { body: { title: "File the receipts", mode: "plain", assignee: "plain", manual: true } });
    expect(manual.status).toBe(201);
    expect(manual.body).toMatchObject({ manual: true });
    expect(manual.body).not.toHaveProperty("round");
    const worked = await call("/v1/tasks", { body: { title: "Tidy the wiki", mode: "plain", assignee: "plain" } });
    expect(worked.body).toMatchObject({ manual: false, round: { round: 1, mode: "solo" } });

    const work = await runWork(runner.token, worked.body.task_id, ["wiki/index.md"]);
    // Without criteria, the task's title is the one criterion the evaluator judges.
    expect(work.payload.prompt).toContain('1. The task "Tidy the wiki" is done as asked.');
    await runEvaluator(runner.token, worked.body.task_id, 1);
    expect(await taskOf(worked.body.task_id, (t) => t.status !== "assigned")).toMatchObject({ status: "done" });

    // The manual task: no round, no job, not even after the tick's backstop.
    await call("/v1/admin/ticks/team", { method: "POST" });
    const left = (await call(`/v1/tasks/${manual.body.task_id}`)).body;
    expect(left).toMatchObject({ status: "assigned", manual: true, goal_loop: { manual: true } });
    expect(left).not.toHaveProperty("rounds");
    const jobs = (await eventsOf("job.queued")).filter((e) => e.payload.owner?.kind === "team_round");
    expect(await leaseStages(runner.token, 1, { taskId: manual.body.task_id, timeoutMs: 2_500 })).toEqual([]);
    expect(jobs.length).toBeGreaterThan(0);
    expect((await call(`/v1/tasks/${manual.body.task_id}/settle`, { body: { status: "done" } })).body).toMatchObject({
      status: "done",
      settled_by: expect.any(String),
    });
  });
});

describe("rounds after a rejection", () => {
  it("gives round 2 what stayed unmet and what round 1 wrote, and parks a goal that never passes as budget_exhausted with its best round", async () => {
    await putEmployee("bo");
    const runner = await createRunner("loop-2");
    const taskId = (await call("/v1/employees/bo/goals", { body: { ...GOAL, rounds_left: 2 } })).body.task_id as string;

    await runWork(runner.token, taskId, ["notes/a.md"]);
    await runEvaluator(runner.token, taskId, 3, [2, 3]);
    const work2 = await runWork(runner.token, taskId, ["notes/b.md"]);
    expect(work2.payload.round).toBe(2);
    expect(work2.payload.prompt).toContain(
      "## Still unmet after round 1\n- 2. notes/b.md exists — no evidence\n- 3. index.md links both — no evidence",
    );
    expect(work2.payload.recheck_paths).toEqual(["notes/a.md"]);
    await runEvaluator(runner.token, taskId, 3, [3]);

    const task = await taskOf(taskId, (t) => t.status !== "assigned");
    expect(task).toMatchObject({
      status: "needs_human",
      pause_class: "budget_exhausted",
      retry_count: 1,
      goal_loop: { rounds_used: 2, rounds_left: 0, best_round: { round: 2, met: 2, of: 3, unmet: [3] } },
    });
    const [stopped] = await eventsOf("goal_stopped", taskId);
    expect(stopped!.payload).toMatchObject({
      reason: "rounds_exhausted",
      pause_class: "budget_exhausted",
      best_round: { round: 2, met: 2 },
    });
  });

  it("stops early when a round's gaps repeat an earlier round's (oscillation), with the best round", async () => {
    await putEmployee("osc");
    const runner = await createRunner("loop-osc");
    const taskId = (await call("/v1/employees/osc/goals", { body: GOAL })).body.task_id as string;
    for (const unmet of [[2], [1, 3], [2]]) {
      await runWork(runner.token, taskId, []);
      await runEvaluator(runner.token, taskId, 3, unmet);
    }
    const task = await taskOf(taskId, (t) => t.status !== "assigned");
    expect(task).toMatchObject({ status: "needs_human", pause_class: "no_progress", goal_loop: { rounds_used: 3, rounds_left: 2 } });
    const [stopped] = await eventsOf("goal_stopped", taskId);
    expect(stopped!.payload).toMatchObject({ reason: "gap_oscillation", repeats_round: 1, best_round: { round: 3, met: 2, unmet: [2] } });
    expect(task.rounds.map((r: any) => r.evaluation.fingerprint)[0]).toBe(task.rounds[2].evaluation.fingerprint);
  });

  it("counts an evaluator answer that does not parse as every criterion unmet (fail closed)", async () => {
    await putEmployee("garble");
    const runner = await createRunner("loop-garble");
    const taskId = (await call("/v1/employees/garble/goals", { body: { ...GOAL, rounds_left: 1 } })).body.task_id as string;
    await runWork(runner.token, taskId, ["notes/a.md", "notes/b.md", "index.md"]);
    const [job] = await leaseStages(runner.token, 1, { taskId });
    await completeStage(runner.token, job!, { text: "Looks great to me, ship it!", runtime: "claude" });
    const task = await taskOf(taskId, (t) => t.status !== "assigned");
    expect(task).toMatchObject({ status: "needs_human", pause_class: "budget_exhausted" });
    expect(task.rounds[0]).toMatchObject({
      phase: "rejected",
      evaluation: { source: "unparseable", unparseable_reason: "not_json", unmet: [1, 2, 3] },
    });
  });

  it("parks the round for a human when the evaluator would be the offline runtime, which cannot judge", async () => {
    await putEmployee("offl", { runtime: "offline", model: { preferred: "offline" } });
    const runner = await createRunner("loop-offline");
    const taskId = (await call("/v1/employees/offl/goals", { body: GOAL })).body.task_id as string;
    let job: any;
    const deadline = Date.now() + 20_000;
    while (!job && Date.now() < deadline) {
      const res = await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, wait_ms: 2_000, runtimes: ["offline"] } });
      job = (res.body.jobs as any[]).find((j) => jobOfTask(j, taskId));
    }
    expect(job).toMatchObject({ kind: "employee_turn", payload: { runtime: "offline" } });
    await completeStage(runner.token, job, { text: "[offline runtime] # Goal round 1 (sha256:abc)", runtime: "offline", model: "offline" });
    const task = await taskOf(taskId, (t) => t.status !== "assigned");
    expect(task).toMatchObject({ status: "needs_human", pause_class: "blocked_needs_decision" });
    expect(task.rounds[0]).toMatchObject({ phase: "needs_human", outcome: { reason: "evaluator_offline_runtime" } });
    expect(task.role_turns.map((r: any) => [r.role, r.outcome])).toEqual([
      ["employee", "completed"],
      ["evaluator", "failed"],
    ]);
  });
});

describe("an employee's rounds in flight", () => {
  it("starts at most max_concurrent of an employee's tasks when many arrive at once; the rest wait and start as slots free", async () => {
    expect((await call("/v1/config/goals", { method: "PUT", body: { max_concurrent: 2 } })).status).toBe(200);
    await putEmployee("busy");
    const created = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call("/v1/tasks", { body: { title: `job ${i}`, mode: "plain", assignee: "busy" } })),
    );
    expect(created.every((r) => r.status === 201)).toBe(true);
    const states = async () => Promise.all(created.map(async (r) => (await call(`/v1/tasks/${r.body.task_id}`)).body.goal_loop.state));
    expect((await states()).filter((s) => s === "working")).toHaveLength(2);
    expect(created.filter((r) => r.body.goal_loop.state === "waiting").map((r) => r.body.goal_loop.reason)).toEqual(
      Array(4).fill("max_concurrent"),
    );
    expect((await eventsOf("goal_waiting")).filter((e) => e.payload.employee_id === "busy").length).toBeGreaterThanOrEqual(4);

    // An operator settles one working task: its slot goes to the oldest waiting one, at once.
    const working = created.filter((r) => r.body.goal_loop.state === "working");
    expect((await call(`/v1/tasks/${working[0]!.body.task_id}/settle`, { body: { status: "done" } })).status).toBe(200);
    const after = await states();
    expect(after.filter((s) => s === "working")).toHaveLength(2);
    expect(after.filter((s) => s === "ended")).toHaveLength(1);
    for (const r of created) await call(`/v1/tasks/${r.body.task_id}/settle`, { body: { status: "failed" } });
    expect((await call("/v1/config/goals", { method: "PUT", body: {} })).status).toBe(200);
  });
});

describe("an employee's rounds in flight, raced", () => {
  it("lets exactly max_concurrent rounds start when the loops of many tasks step at the same instant", async () => {
    expect((await call("/v1/config/goals", { method: "PUT", body: { max_concurrent: 3 } })).status).toBe(200);
    await putEmployee("racer");
    // Tasks that exist, unworked, then all become worked at once: every step reads "no round in flight".
    const ids: string[] = [];
    for (let i = 0; i < 8; i++)
      ids.push((await call("/v1/tasks", { body: { title: `r${i}`, mode: "plain", assignee: "racer", manual: true } })).body.task_id);
    await env.DB.prepare(`UPDATE tasks SET manual = 0, rounds_budget = 5 WHERE assigned_to = 'racer'`).run();
    const now = new Date();
    const steps = await Promise.all(ids.map((id) => continueLoop(env, id, now, { resumeOthers: false })));
    expect(steps.filter((s) => s.kind === "started")).toHaveLength(3);
    expect(steps.filter((s) => s.kind === "waiting")).toHaveLength(5);
    const live = await env.DB.prepare(
      `SELECT COUNT(*) AS n FROM team_rounds r JOIN tasks t ON t.id = r.task_id WHERE t.assigned_to = 'racer' AND r.phase = 'working'`,
    ).first<{ n: number }>();
    expect(live?.n).toBe(3);
    for (const id of ids) await call(`/v1/tasks/${id}/settle`, { body: { status: "failed" } });
    expect((await call("/v1/config/goals", { method: "PUT", body: {} })).status).toBe(200);
  });
});

describe("goals that cannot be carried", () => {
  it("refuses a goal whose frozen prompt could not fit a stage with 422 naming the limit, and creates nothing", async () => {
    await putEmployee("huge");
    const before = (await eventsOf("task.created")).length;
    const criteria = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(1_994, "x"));
    for (const [path, body] of [
      ["/v1/employees/huge/goals", { title: "Too much", acceptance_criteria: criteria }],
      ["/v1/tasks", { title: "Too much", mode: "goal", assignee: "huge", acceptance_criteria: criteria }],
    ] as const) {
      const res = await call(path, { body });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe("validation_failed");
      expect(res.body.errors).toEqual([
        expect.objectContaining({
          path: "acceptance_criteria",
          message: expect.stringContaining(`at most ${FROZEN_GOAL_MAX_BYTES} bytes`),
        }),
      ]);
    }
    expect((await eventsOf("task.created")).length).toBe(before);
    // Just under the limit is accepted.
    const fits = Array.from({ length: 16 }, (_, i) => `${i}`.padEnd(1_990, "y"));
    const ok = await call("/v1/tasks", {
      body: { title: "Fits", mode: "goal", assignee: "huge", acceptance_criteria: fits, manual: true },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });

  it("refuses rounds on a manual task", async () => {
    await putEmployee("man");
    const res = await call("/v1/tasks", { body: { title: "x", mode: "plain", assignee: "man", manual: true, rounds_left: 3 } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: "rounds_left" })]);
  });
});
