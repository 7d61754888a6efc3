import { describe, expect, it } from "vitest";
import { call, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import { completeStage, handoff, leaseStages } from "../../factories/scripted-runner";
import { eventsOf, putTeamConfig, SEED_TEAM } from "../../factories/team";

/**
 * Issue 39: the decomposability gate measures its signals and exclusions from the goal (and the
 * conversation it was raised in) instead of taking them from the request. What a caller claims is a
 * hint that can only keep the goal solo. `[team]` is the seed's, with `gate = "auto"`.
 */
const TEAM_CLAIM = { independent_items: 9, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true };
const SMALL = { title: "Fix the typo in the greeting", acceptance_criteria: ["the greeting reads Hello"] };
const FOUR = {
  title: "Write the onboarding notes",
  acceptance_criteria: ["notes/a.md covers accounts", "notes/b.md covers tools", "notes/c.md covers people", "notes/d.md covers rituals"],
};

async function putEmployee(id: string) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function settle(taskId: string) {
  expect((await call(`/v1/tasks/${taskId}/settle`, { body: { status: "failed" } })).status).toBe(200);
}

describe("the gate measures, the caller does not decide", () => {
  it("keeps a small goal solo however many signals the caller claims, and shows what it measured and ignored", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("mika");
    const res = await call("/v1/employees/mika/goals", {
      body: { ...SMALL, signals: TEAM_CLAIM, exclusions: { live_channel_turn: false, irreversible_in_plan: false } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      gate: {
        decision: "solo",
        reason: "signals_solo",
        signals: { held: 0, volume: { holds: false }, context: { holds: false, unmeasured: true }, long_horizon: { unmeasured: true } },
        measured: { items: [], artifacts_total: 0, unmeasured: ["fits_one_context", "produces_artifacts"] },
      },
      round: { round: 1, mode: "solo" },
    });
    expect(res.body.gate.measured.hints).toEqual({
      applied: [],
      ignored: [
        "signals.independent_items",
        "signals.dependency_hubs",
        "signals.fits_one_context",
        "signals.produces_artifacts",
        "exclusions.live_channel_turn",
        "exclusions.irreversible_in_plan",
      ],
    });
    // The task keeps the decision with its measurement; the frozen event says why too.
    const task = (await call(`/v1/tasks/${res.body.task_id}`)).body;
    expect(task.gate).toMatchObject({ decision: "solo", reason: "signals_solo", measured: { hints: { applied: [] } } });
    const [frozen] = await eventsOf("team_spec_frozen", res.body.task_id);
    expect(frozen!.payload.gate).toMatchObject({ decision: "solo", signals: { held: 0 }, measured: { items: [] } });
    await settle(res.body.task_id);
  });

  it("cannot lift a measured exclusion: a goal with an irreversible operation stays solo even when the caller says otherwise", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("noa");
    const res = await call("/v1/employees/noa/goals", {
      body: {
        title: "Clean the build host",
        acceptance_criteria: [...FOUR.acceptance_criteria, "finish with rm -rf / on the host"],
        exclusions: { irreversible_in_plan: false },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.gate).toMatchObject({
      decision: "solo",
      reason: "excluded_irreversible_in_plan",
      measured: { irreversible: ["destructive_operation"], hints: { ignored: ["exclusions.irreversible_in_plan"] } },
    });
    await settle(res.body.task_id);
  });

  it("lets the caller's hints lean solo: a claimed exclusion keeps a splittable goal solo", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("oki");
    const res = await call("/v1/employees/oki/goals", { body: { ...FOUR, exclusions: { plan_first_pending: true } } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.gate).toMatchObject({
      decision: "solo",
      reason: "excluded_plan_first_pending",
      signals: { held: 2 },
      measured: { hints: { applied: ["exclusions.plan_first_pending"] } },
    });
    await settle(res.body.task_id);
  });

  it("keeps a goal raised while the employee answers a live turn solo (excluded_live_channel_turn)", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("pia");
    const opened = await call("/v1/employees/pia/conversations", { body: { user_id: "u-live" } });
    expect(opened.status).toBe(201);
    const conversation = opened.body.conversation_id as string;
    expect((await call(`/v1/conversations/${conversation}/messages`, { body: { content: "Can you write the notes?" } })).status).toBe(202);
    const res = await call("/v1/employees/pia/goals", { body: { ...FOUR, conversation_id: conversation } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.gate).toMatchObject({
      decision: "solo",
      reason: "excluded_live_channel_turn",
      measured: { conversation: "live_reply_pending" },
    });
    await settle(res.body.task_id);
  });

  it("gives a goal that really splits into 4 independent deliverables the team: gray as measured, then team on the planner's real decomposition", async () => {
    await putTeamConfig(SEED_TEAM);
    await putEmployee("quin");
    const runner = await createRunner("gate-measure-four");
    const res = await call("/v1/employees/quin/goals", { body: FOUR });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // Volume and long horizon are measured and hold; context (no known window) and the capability gap
    // (no matrix) stay unmeasured: exactly 2 signals, the seed's gray zone.
    expect(res.body).toMatchObject({
      gate: {
        decision: "gray",
        reason: "signals_gray",
        signals: {
          held: 2,
          volume: { holds: true, unmeasured: false },
          long_horizon: { holds: true, unmeasured: false },
          context: { holds: false, unmeasured: true },
          capability_gap: { holds: false, unmeasured: true },
        },
        measured: {
          items: [{ artifact: "notes/a.md" }, { artifact: "notes/b.md" }, { artifact: "notes/c.md" }, { artifact: "notes/d.md" }],
        },
      },
      round: { round: 1, mode: "gray", phase: "planning" },
    });
    const taskId = res.body.task_id as string;
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    for (const id of ["a", "b", "c", "d"])
      expect((await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: id }))).status).toBe(201);
    await completeStage(runner.token, plan!, { text: "planned" });
    // The re-gate counts 4 independent subtasks: the round goes on as a team, two executors.
    const executors = await leaseStages(runner.token, 2, { taskId });
    expect(executors.map((j) => j.payload.role)).toEqual(["executor", "executor"]);
    const task = (await call(`/v1/tasks/${taskId}`)).body;
    expect(task.rounds[0]).toMatchObject({ mode: "gray", regate: { decision: "team", independent: 4 } });
    await settle(taskId);
  });
});
