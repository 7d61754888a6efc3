import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { continueLoop } from "../../../src/team/goal-loop";
import { startRound } from "../../../src/team/round-driver";
import { call, createOperator } from "../../factories";
import { login, web } from "../../factories/web";
import { eventsOf, putTeamConfig, SEED_TEAM } from "../../factories/team";

/**
 * Issue 39 (seed 002): under `[dispatch] policy = "role_team"` a goal task from POST /v1/tasks is
 * worked as a team round, and the round's start posts one progress line, with its estimate, into the
 * conversation the task came from, once however often the start is repeated.
 */
const CRITERIA = ["notes/a.md exists", "notes/b.md exists", "index.md links both"];

async function setUp(id: string) {
  await putTeamConfig(SEED_TEAM);
  const emp = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
  });
  expect(emp.status, JSON.stringify(emp.body)).toBe(200);
  const conv = await call(`/v1/employees/${id}/conversations`, { body: { user_id: "user-1" } });
  expect(conv.status, JSON.stringify(conv.body)).toBe(201);
  return conv.body.conversation_id as string;
}

describe("role_team dispatch and the round progress line", () => {
  it("works a task created under role_team as a team round and posts exactly one progress line into its conversation", async () => {
    const dispatch = await call("/v1/config/dispatch", { method: "PUT", body: { policy: "role_team" } });
    expect(dispatch.status, JSON.stringify(dispatch.body)).toBe(200);
    const goals = await call("/v1/config/goals", { method: "PUT", body: { progress_interval_minutes: 7 } });
    expect(goals.status, JSON.stringify(goals.body)).toBe(200);
    const conversationId = await setUp("rt-emp");

    const res = await call("/v1/tasks", {
      body: {
        title: "Write the onboarding notes",
        mode: "goal",
        assignee: "rt-emp",
        acceptance_criteria: CRITERIA,
        conversation_id: conversationId,
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      route: { policy: "role_team" },
      routed_by: "hierarchy",
      team: { gate: { decision: "team", reason: "dispatch_role_team" } },
      round: { round: 1, mode: "team" },
    });
    const taskId = res.body.task_id as string;

    const view = await call(`/v1/conversations/${conversationId}`);
    expect(view.status).toBe(200);
    expect(view.body.turns).toEqual([]);
    expect(view.body.notices).toHaveLength(1);
    expect(view.body.notices[0]).toMatchObject({ kind: "goal_progress", task_id: taskId, round_id: res.body.round.round_id });
    expect(view.body.notices[0].content).toContain("about 21 min");
    expect(view.body.notices[0].content).toContain("not a guarantee");
    // The console's conversation page shows the line among the messages, linked to its task.
    const viewer = await login(await createOperator("viewer", "rt-viewer"));
    const page = await web(`/console/conversations/${conversationId}`, { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toMatch(
      new RegExp(
        `<li class="notice" data-kind="goal_progress"><p class="meta">progress of <a href="/console/tasks/${taskId}">[^]*?about 21 min`,
      ),
    );
    expect(page.text).not.toContain("No message yet.");

    // A redelivered start: the loop step and a direct start both find the round in flight.
    await continueLoop(env, taskId, new Date());
    expect(await startRound(env, { taskId, mode: "team" }, new Date())).toEqual({ waiting: true, reason: "round_in_progress" });
    expect((await call(`/v1/conversations/${conversationId}`)).body.notices).toHaveLength(1);

    const started = (await eventsOf("team_round_started")).filter((e) => e.payload.task_id === taskId || e.subject === taskId);
    expect(started).toHaveLength(1);
    expect(started[0]!.payload.progress).toEqual({ estimate_minutes: 21, interval_minutes: 7, stages: 3, conversation_id: conversationId });
  });

  it("refuses a task whose conversation_id names no conversation, and creates nothing", async () => {
    await setUp("rt-emp2");
    const res = await call("/v1/tasks", {
      body: { title: "Anything", mode: "goal", assignee: "rt-emp2", acceptance_criteria: CRITERIA, conversation_id: "conv_nothere" },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
  });
});
