import { describe, expect, it } from "vitest";
import { call, createRunner } from "../../factories";
import { advance, dialog, offlineAnswer, progress, propose, runOneJob, session } from "../../factories/council-http";
import { eligibleNode, heartbeat, type TestNode } from "../../factories/nodes";
import { DECOMPOSITION, project, projectProposal, projectsTick } from "../../factories/projects";
import { leaseOnce } from "../../factories/runner-protocol";

let seq = 0;
const known = new Map<string, TestNode>();

const put = async (section: string, body: Record<string, unknown>) => {
  const res = await call(`/v1/config/${section}`, { method: "PUT", body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

async function runnerOffering(runtimes: string[]) {
  const runner = await createRunner(`mwp-runner-${seq++}`);
  expect((await leaseOnce(runner.token, { runtimes, capacity: 1 })).status).toBe(200);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const offered = (await call("/v1/config/model_work")).body.offered_runtimes as string[];
    if (runtimes.every((r) => offered.includes(r))) return runner;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the runtimes ${runtimes.join(", ")} were never recorded`);
}

/**
 * A project proposal approved by a real session. The council's own stages are set off by hand here
 * (explicit settings win over model_work), so only the decomposition follows model_work.
 */
async function approvedProject(name: string): Promise<{ sid: string; projectId: string }> {
  if (known.size === 0) {
    for (let i = 0; i < 9; i++) {
      const m = await eligibleNode(`mwp-m${seq++}`, 50);
      known.set(m.node_id, m);
    }
  }
  const proposer = await eligibleNode(`mwp-p${seq++}`, 65);
  known.set(proposer.node_id, proposer);
  const res = await propose(proposer, projectProposal(name));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const sid = res.body.session_id as string;
  let s = await session(sid);
  const seated = s.members.filter((m: { role: string }) => m.role !== "proposer").map((m: { node_id: string }) => known.get(m.node_id)!);
  for (const m of seated) await heartbeat(m);
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "assess", content: "Useful." })).status).toBe(201);
  await progress();
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "develop", content: "In parts." })).status).toBe(201);
  await progress();
  s = await session(sid);
  for (const m of seated) {
    expect((await dialog(m, sid, { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: s.proposal_hash })).status).toBe(
      201,
    );
  }
  await progress();
  s = await session(sid);
  expect(s.phase).toBe("approved");
  return { sid, projectId: s.project_id };
}

const modelAnswer = () => ({ text: JSON.stringify(DECOMPOSITION), runtime: "claude", model: "claude-test" });

describe("model_work and a project's decomposition", () => {
  it("falls back to today's offline attempt saying runtime_not_offered, then decomposes on the runtime once a runner offers it", async () => {
    await put("council", { prescreen: "off", synthesis: "off", ethics_model: "off" });
    await put("model_work", { runtime: "claude" });
    const stages = (await call("/v1/config/projects")).body.stages;
    expect(stages.decomposition).toEqual({
      on_model: false,
      set_by: "model_work",
      runtime: "offline",
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
    });

    const { sid, projectId } = await approvedProject("fallback-then-model");
    // pending, and the project already says why this attempt will not decompose
    expect((await project(projectId)).decomposition).toMatchObject({ state: "pending", attempts: 1, reason: "runtime_not_offered" });
    const offline = await runOneJob(["offline"], offlineAnswer);
    expect(offline.payload.runtime).toBe("offline");
    const failed = await project(projectId);
    expect(failed.decomposition).toMatchObject({
      state: "failed",
      reason: "runtime_not_offered",
      detail: expect.stringContaining("model_work names claude"),
    });
    expect((await session(sid)).model_work.decomposition).toEqual({
      status: "failed",
      on_model: false,
      runtime: "offline",
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
    });

    // a runner offering claude comes up; after the backoff the next attempt runs on it
    await advance(61_000);
    await runnerOffering(["offline", "claude"]);
    expect((await projectsTick()).decompositions_started).toBe(1);
    expect((await project(projectId)).decomposition).toMatchObject({ state: "pending", attempts: 2, reason: null });
    const job = await runOneJob(["claude"], modelAnswer);
    expect(job.payload.runtime).toBe("claude");
    const p = await project(projectId);
    expect(p).toMatchObject({ status: "active", decomposition: { state: "done", source: "model", reason: null } });
    expect((await session(sid)).model_work.decomposition).toEqual({ status: "done", on_model: true, runtime: "claude" });
  });

  it("decomposes on model_work's runtime at approval when a runner offers it", async () => {
    const { sid, projectId } = await approvedProject("on-model");
    expect((await session(sid)).model_work).toMatchObject({
      prescreen: { on_model: false, fell_back_because: "stage_off" },
      synthesis: { on_model: false, fell_back_because: "stage_off" },
      ethics: { on_model: false, fell_back_because: "stage_off" },
      decomposition: { status: "pending", on_model: true, runtime: "claude" },
    });
    const job = await runOneJob(["claude"], modelAnswer);
    expect(job.payload.runtime).toBe("claude");
    expect((await project(projectId)).status).toBe("active");
    await put("council", {});
    await put("model_work", {});
  });
});
