import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openTeamGoal } from "../../../src/team/goals";
import { startTeamRound } from "../../../src/team/round-driver";
import { call, createOperator, createRunner, mintToken } from "../../factories";
import { packet } from "../../factories/packets";
import { handoff, leaseStages } from "../../factories/scripted-runner";
import { db, employee, newTaskId, putTeamConfig, SEED_TEAM } from "../../factories/team";

const goal = { title: "Write the notes", acceptance_criteria: ["a", "b", "c"] };

/** A round whose planner stage is running; returns its member token. */
async function runningPlanner() {
  await putTeamConfig(SEED_TEAM);
  const taskId = newTaskId();
  await openTeamGoal(
    db(),
    {
      taskId,
      // The gate is not under test here: `always_team` (test only, seed 002) forms the team.
      employee: employee({ team: { gate: "always_team" } }),
      goal,
    },
    new Date(),
  );
  const { state } = await startTeamRound(env, taskId, new Date());
  const runner = await createRunner(`handoff-${taskId}`);
  const [job] = await leaseStages(runner.token, 1, { taskId });
  return { taskId, roundId: state.round_id, token: job!.payload.member_token, runner, job: job! };
}

describe("POST /v1/team/handoff", () => {
  it("stores packets in derived slots: a new packet_id takes the next slot, the same one overwrites its own", async () => {
    const { taskId, token } = await runningPlanner();
    const first = await handoff(token, packet(taskId, 1, "planner", "executor", { packet_id: "sub-1" }));
    expect(first).toMatchObject({
      status: 201,
      body: { leg: "planner-to-executor", slot: 0, packet_id: "sub-1", path: `${taskId}/r1/planner-to-executor` },
    });
    const second = await handoff(token, packet(taskId, 1, "planner", "executor", { packet_id: "sub-2" }));
    expect(second.body).toMatchObject({ slot: 1, path: `${taskId}/r1/planner-to-executor.01` });
    const retry = await handoff(token, packet(taskId, 1, "planner", "executor", { packet_id: "sub-1", objective: "retried" }));
    expect(retry.body).toMatchObject({ slot: 0 });
  });

  it("never accepts a path or slot from the body", async () => {
    const { taskId, token } = await runningPlanner();
    const res = await call("/v1/team/handoff", {
      token,
      body: { packet: packet(taskId, 1, "planner", "executor"), path: "../../other-task/r1/planner-to-executor" },
    });
    expect(res.status).toBe(422);
    const res2 = await handoff(token, { ...packet(taskId, 1, "planner", "executor"), slot: 7 });
    expect(res2.status).toBe(422);
  });

  it("refuses a packet that does not match the token's pin (task, round, role) with 403", async () => {
    const { taskId, token } = await runningPlanner();
    for (const [what, p] of [
      ["another task", packet("task_ffffffffffffffff", 1, "planner", "executor")],
      ["another round", packet(taskId, 2, "planner", "executor")],
      ["another role", packet(taskId, 1, "executor", "verifier")],
    ] as const) {
      const res = await handoff(token, p);
      expect(res.status, what).toBe(403);
      expect(res.body.code).toBe("forbidden");
    }
  });

  it("refuses a leg that does not exist with 422", async () => {
    const { taskId, token } = await runningPlanner();
    const res = await handoff(token, packet(taskId, 1, "planner", "verifier"));
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ path: "packet.to_role", message: "no leg planner-to-verifier" }]);
  });

  it("refuses a member identity without a pin, and every non-member token", async () => {
    const { taskId } = await runningPlanner();
    const unpinned = await mintToken("member", { subject: "team:whatever" });
    expect((await handoff(unpinned.token, packet(taskId, 1, "planner", "executor"))).status).toBe(403);
    const manager = await createOperator("manager");
    expect((await handoff(manager, packet(taskId, 1, "planner", "executor"))).status).toBe(403);
    const runner = await createRunner("not-a-member");
    expect((await handoff(runner.token, packet(taskId, 1, "planner", "executor"))).status).toBe(403);
    expect((await handoff("", packet(taskId, 1, "planner", "executor"))).status).toBe(401);
  });

  it("refuses an expired member token", async () => {
    const { taskId, roundId, job } = await runningPlanner();
    const scope = { kind: "team_stage", task_id: taskId, round: 1, round_id: roundId, role: "planner", stage_id: job.payload.stage_id };
    const expired = await mintToken("member", { subject: JSON.stringify(scope), expiresAt: new Date(Date.now() - 1_000) });
    expect((await handoff(expired.token, packet(taskId, 1, "planner", "executor"))).status).toBe(401);
  });

  it("answers 409 when the token's stage is not running", async () => {
    const { taskId, roundId } = await runningPlanner();
    const scope = { kind: "team_stage", task_id: taskId, round: 1, round_id: roundId, role: "planner", stage_id: "stg_not_running" };
    const stray = await mintToken("member", { subject: JSON.stringify(scope), expiresAt: new Date(Date.now() + 60_000) });
    const res = await handoff(stray.token, packet(taskId, 1, "planner", "executor"));
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("wrong_phase");
  });

  it("rejects an invalid packet with 422 and field paths, storing nothing", async () => {
    const { taskId, token } = await runningPlanner();
    const res = await handoff(token, { ...packet(taskId, 1, "planner", "executor"), transcript: [{ role: "assistant", content: "…" }] });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
    const view = (await call(`/v1/team/tasks/${taskId}`)).body;
    expect(view.rounds[0].phase).toBe("planning");
    const ok = await handoff(token, packet(taskId, 1, "planner", "executor", { packet_id: "first" }));
    expect(ok.body.slot).toBe(0);
  });
});
