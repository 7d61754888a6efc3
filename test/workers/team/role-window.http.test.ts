import { describe, expect, it } from "vitest";
import { call, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import { completeStage, handoff, leaseStages } from "../../factories/scripted-runner";
import { putTeamConfig, SEED_TEAM } from "../../factories/team";

/**
 * The `role_team` spawn window (seed 002 "レート", issue 10 item 8): role-member spawns count in
 * their own window per employee (`[dispatch_guard] role_team_max_in_window`), apart from the
 * employee's own dispatch window (`max_in_window`). A spawn over the window waits (its stage stays
 * pending) and the team tick launches it once the window has room; it never fails the stage.
 */
const GOAL = {
  title: "Write the onboarding notes",
  acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "index links both"],
};

const executeStages = async (taskId: string) =>
  ((await call(`/v1/tasks/${taskId}`)).body.rounds[0].stages as any[]).filter((s) => s.kind === "execute");

describe("the role_team window", () => {
  it("holds spawns over the team's window pending without touching the employee's own window, and the tick launches them when it has room", async () => {
    // The gate is not under test here: `always_team` (test only, seed 002) forms the team.
    await putTeamConfig({ ...SEED_TEAM, executor_fanout: 2, gate: "always_team" });
    const guard = await call("/v1/config/dispatch_guard", {
      method: "PUT",
      body: { max_in_window: 2, window_secs: 60, role_team_max_in_window: 1 },
    });
    expect(guard.status, JSON.stringify(guard.body)).toBe(200);
    const put = await call("/v1/employees/rin", {
      method: "PUT",
      body: { name: "Rin", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
    });
    expect(put.status).toBe(200);
    const runner = await createRunner("role-window");

    // The goal is the employee's own dispatch (1 of 2); its planner is the team's one spawn.
    const taskId = (await call("/v1/employees/rin/goals", { body: GOAL })).body.task_id;
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    for (const id of ["a", "b"])
      expect((await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: id }))).status).toBe(201);
    await completeStage(runner.token, plan!, { text: "planned" });

    // Both executors are over the team's window: pending, not failed, and nothing to lease.
    expect(await leaseStages(runner.token, 1, { taskId, timeoutMs: 3_000 })).toEqual([]);
    const held = await executeStages(taskId);
    expect(held.map((s) => s.status)).toEqual(["pending", "pending"]);

    // The employee's own window is its own: one more plain task fits (2 of 2), the next does not.
    const plain = { title: "Answer the vendor", mode: "plain", assignee: "rin", manual: true };
    expect((await call("/v1/tasks", { body: plain })).status).toBe(201);
    const refused = await call("/v1/tasks", { body: plain });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("rate_limited");

    // A minute later the team's window has room for one spawn again: the tick launches one executor.
    expect((await call("/v1/admin/clock", { body: { advance_ms: 61_000 } })).status).toBe(200);
    const tick = await call("/v1/admin/ticks/team", { method: "POST" });
    expect(tick.body.summary.stages_relaunched).toBe(1); // the other one still waits, and is not counted
    const launched = await leaseStages(runner.token, 1, { taskId });
    expect(launched).toHaveLength(1);
    expect((await executeStages(taskId)).map((s) => s.status).sort()).toEqual(["dispatched", "pending"]);
  });
});
