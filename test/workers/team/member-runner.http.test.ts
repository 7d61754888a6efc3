import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { jobs, teamPackets } from "../../../src/db/schema";
import { inboxJob } from "../../factories/inbox-pools";
import { prepareJob, REDACTED_SECRET } from "../../../src/jobs/submit";
import { markStage } from "../../../src/team/composer";
import { openTeamGoal } from "../../../src/team/goals";
import { startTeamRound } from "../../../src/team/round-driver";
import { mutateRound } from "../../../src/team/round-store";
import { call, createOperator, createRunner } from "../../factories";
import { packet } from "../../factories/packets";
import { completeStage, handoff, lastRound, leaseStages, waitForTeamTask } from "../../factories/scripted-runner";
import { db, employee, eventsOf, newTaskId, putTeamConfig, SEED_TEAM } from "../../factories/team";

const goal = { title: "Write the onboarding notes", acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "index links both"] };
// The gate is not under test here: `always_team` (test only, seed 002) forms the team whatever the goal measures.
const ALWAYS_TEAM = { gate: "always_team" } as const;

async function teamTask() {
  await putTeamConfig({ ...SEED_TEAM, executor_fanout: 1 });
  const taskId = newTaskId();
  const opened = await openTeamGoal(db(), { taskId, employee: employee({ team: ALWAYS_TEAM }), goal }, new Date());
  expect(opened).toMatchObject({ team: "frozen" });
  return taskId;
}

describe("GET /v1/team/member: a running member's runner asks whether its round goes on", () => {
  it("says live while the stage runs, and refuses the token once the round ended in any way", async () => {
    const taskId = await teamTask();
    const runner = await createRunner("member-status");
    await startTeamRound(env, taskId, new Date());
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    const token = plan!.payload.member_token;

    const live = await call("/v1/team/member", { token });
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({
      task_id: taskId,
      round: 1,
      role: "planner",
      round_phase: "planning",
      stage_status: "dispatched",
      live: true,
    });
    // Only the member itself asks with its own token; an operator's token is no member identity.
    expect((await call("/v1/team/member", { token: await createOperator("admin", "op-status") })).status).toBe(403);

    await completeStage(runner.token, plan!, { text: "nothing to hand off" }); // a planner without packets parks the round
    await waitForTeamTask(taskId, (v) => lastRound(v).phase === "needs_human");
    const after = await call("/v1/team/member", { token });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe("unauthorized");
  });
});

describe("a stage job whose dispatch was lost", () => {
  it("dies with member_token_unrecoverable instead of being rebuilt from its row with a redacted token, and fails its stage", async () => {
    const taskId = await teamTask();
    const { state } = await startTeamRound(env, taskId, new Date());
    const stageId = state.stages[0]!.stage_id;
    // The planner's job as the D1 row keeps it (token redacted), recorded long enough ago for the
    // reconciler, but never handed to the dispatch queue: the round points its stage at it.
    const queued = await db().select().from(jobs).where(eq(jobs.id, state.stages[0]!.job_id!)).get();
    expect(queued!.payload.member_token).toBe(REDACTED_SECRET);
    const lost = prepareJob(
      db(),
      { kind: "team_stage", payload: queued!.payload as never, owner: { kind: "team_round", id: state.round_id } },
      new Date(Date.now() - 10 * 60_000),
    );
    await db().batch(lost.statements);
    await mutateRound(db(), state.round_id, "test:lost-dispatch", new Date(), (s) => ({
      state: markStage(s, stageId, { job_id: lost.jobId }),
      result: null,
    }));

    const tick = await call("/v1/admin/ticks/leases", { method: "POST" });
    expect(tick.status).toBe(200);
    expect(tick.body.summary.reconciled).toMatchObject({ invalid: 1, redispatched: 0 });
    expect(await inboxJob(env, lost.jobId)).toBeNull();
    expect((await call(`/v1/admin/jobs/${lost.jobId}`)).body).toMatchObject({
      status: "dead",
      error: { code: "member_token_unrecoverable" },
    });

    const view = await waitForTeamTask(taskId, (v) => lastRound(v).phase === "needs_human");
    expect(lastRound(view).outcome).toMatchObject({ reason: "team_stage_failed" });
    const turn = (await call(`/v1/tasks/${taskId}/roles`)).body.role_turns.find((r: any) => r.role === "planner");
    expect(turn).toMatchObject({ outcome: "failed", failure_edge: "dispatch", fault_side: "platform" });
  });
});

describe("what the Worker does with a runner's artifact receipts", () => {
  it("fills an artifact hash the executor did not declare from its receipt, keeps a wrong declared one, and records the receipts' audits", async () => {
    const taskId = await teamTask();
    const runner = await createRunner("receipts");
    await startTeamRound(env, taskId, new Date());
    const [plan] = await leaseStages(runner.token, 1, { taskId });
    expect((await handoff(plan!.payload.member_token, packet(taskId, 1, "planner", "executor", { packet_id: "a" }))).status).toBe(201);
    await completeStage(runner.token, plan!, { text: "planned" });

    const [exec] = await leaseStages(runner.token, 1, { taskId });
    const observedA = "3f2a".padEnd(64, "0");
    const declaredB = "bb22".padEnd(64, "0");
    const out = packet(taskId, 1, "executor", "verifier", {
      packet_id: "done-a",
      artifacts: [{ path: "notes/a.md" }, { path: "notes/b.md", sha256: declaredB }],
    });
    expect((await handoff(exec!.payload.member_token, out)).status).toBe(201);
    await completeStage(runner.token, exec!, {
      text: "done",
      runtime: "codex",
      evidence: { native_tool_events: 3, mcp_calls: 1 },
      tool_activity: [{ name: "file_change", ok: 1, err: 0 }],
      artifact_receipts: [
        { path: "notes/a.md", state: "exists", bytes: 6, sha256: observedA },
        { path: "notes/b.md", state: "mismatch", bytes: 5, sha256: "cc33".padEnd(64, "0"), declared_sha256: declaredB },
      ],
      artifact_audits: [{ type: "team_packet_artifact_mismatch", path: "notes/b.md", detail: "declared bb22…" }],
    });

    const [verify] = await leaseStages(runner.token, 1, { taskId });
    expect(verify!.payload.input.prompt).toContain("notes/b.md 5B sha256=cc330000… mismatch (declared bb220000…)");
    const stored = await db().select().from(teamPackets).where(eq(teamPackets.packetId, "done-a")).get();
    const body = JSON.parse(stored!.body);
    expect(body.artifacts).toEqual([
      { path: "notes/a.md", sha256: observedA, bytes: 6 },
      { path: "notes/b.md", sha256: declaredB },
    ]);
    expect(body.fidelity).toBe("full");
    const [audit] = await eventsOf("team_packet_artifact_mismatch", taskId);
    expect(audit!.payload).toMatchObject({ path: "notes/b.md", stage_id: exec!.payload.stage_id });
    await completeStage(runner.token, verify!, { verdict: "FAIL", reasons: ["notes/b.md mismatch"] });
  });
});
