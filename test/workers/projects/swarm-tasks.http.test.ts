import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { swarmTasks } from "../../../src/db/schema";
import { newId } from "../../../src/lib/ids";
import { call } from "../../factories";
import { advance } from "../../factories/council-http";
import { eligibleNode, registerNode, type TestNode } from "../../factories/nodes";
import { decompose, insertProject, project, projectsTick } from "../../factories/projects";

const claim = (id: string, node: TestNode) => call(`/v1/swarm/tasks/${id}/claim`, { token: node.token, method: "POST" });
const complete = (id: string, node: TestNode, body: Record<string, unknown> = { summary: "Done: the runner is designed and reviewed." }) =>
  call(`/v1/swarm/tasks/${id}/complete`, { token: node.token, body });
const task = async (id: string) => (await call(`/v1/swarm/tasks/${id}`, { token: null })).body;

async function activeTasks() {
  const id = await insertProject("approved");
  expect((await decompose(id)).status).toBe(200);
  return { projectId: id, tasks: (await project(id)).tasks as { task_id: string; title: string }[] };
}

/** A council task (an approved general proposal's), as the council's effects write it. */
async function councilTask(days = 90) {
  const id = newId("task");
  const now = Date.parse((await call("/v1/admin/clock")).body.now);
  await getDb(env.DB)
    .insert(swarmTasks)
    .values({
      id,
      title: "Publish a weekly digest",
      body: "The council's consensus.",
      status: "open",
      sourceSessionId: `delib_${"b".repeat(16)}`,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + days * 86_400_000).toISOString(),
    });
  return id;
}

describe("swarm task claims", () => {
  it("gives one of 10 racing claims 200 and the other nine 409, with one claim event", async () => {
    const { tasks } = await activeTasks();
    const nodes = await Promise.all(Array.from({ length: 10 }, (_, i) => eligibleNode(`racer-${i}`, 30)));
    const results = await Promise.all(nodes.map((n) => claim(tasks[0]!.task_id, n)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    const winner = nodes[statuses.indexOf(200)]!;
    for (const r of results.filter((r) => r.status === 409)) expect(r.body).toMatchObject({ code: "conflict", reason: "already_claimed" });
    expect(await task(tasks[0]!.task_id)).toMatchObject({
      status: "claimed",
      claimed_by: winner.node_id,
      claim_expires_at: expect.any(String),
    });
    const claimed = await call(`/v1/events?type=swarm_task.claimed&subject=${tasks[0]!.task_id}`);
    expect(claimed.body.events).toHaveLength(1);
    expect(claimed.body.events[0].payload.node_id).toBe(winner.node_id);
    // the claimant repeating its claim gets its claim back, not a new one
    expect((await claim(tasks[0]!.task_id, winner)).status).toBe(200);
    expect((await call(`/v1/events?type=swarm_task.claimed&subject=${tasks[0]!.task_id}`)).body.events).toHaveLength(1);
  });

  it("refuses nodes below the claim reputation, operators and unknown tasks", async () => {
    const { tasks } = await activeTasks();
    const councilId = await councilTask();
    const newcomer = await registerNode({ name: "newcomer" });
    const low = await claim(councilId, newcomer);
    expect([low.status, low.body.code, low.body.reason]).toEqual([403, "not_eligible", "reputation_insufficient"]);
    expect((await call(`/v1/swarm/tasks/${tasks[0]!.task_id}/claim`, { method: "POST" })).status).toBe(403);
    expect((await call(`/v1/swarm/tasks/${tasks[0]!.task_id}/claim`, { method: "POST", token: null })).status).toBe(401);
    const solver = await eligibleNode("solver-x", 30);
    expect((await claim("task_0000000000000000", solver)).status).toBe(404);
    const below = await eligibleNode("below-newcomer", 5);
    expect((await claim(tasks[0]!.task_id, below)).body.reason).toBe("reputation_insufficient");
  });

  it("lets a newcomer (reputation 10) hold one project task at a time, and a node above the floor three", async () => {
    const { tasks } = await activeTasks();
    const more = await activeTasks();
    const newcomer = await registerNode({ name: "newcomer-2" });
    expect((await claim(tasks[0]!.task_id, newcomer)).status).toBe(200);
    const second = await claim(tasks[1]!.task_id, newcomer);
    expect([second.status, second.body.reason, second.body.held, second.body.limit]).toEqual([409, "holding_limit", 1, 1]);
    const regular = await eligibleNode("regular", 30);
    for (const t of [tasks[1]!, tasks[2]!, more.tasks[0]!]) expect((await claim(t.task_id, regular)).status).toBe(200);
    expect((await claim(more.tasks[1]!.task_id, regular)).body).toMatchObject({ reason: "holding_limit", limit: 3 });
    // racing claims of one node on many tasks never pass its limit
    const racer = await eligibleNode("limit-racer", 30);
    const results = await Promise.all([more.tasks[1]!, more.tasks[2]!, ...(await activeTasks()).tasks].map((t) => claim(t.task_id, racer)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
  });

  it("lets a lapsed claim be taken over, and a claimant release its task", async () => {
    const { tasks } = await activeTasks();
    const [a, b] = [await eligibleNode("lapse-a", 30), await eligibleNode("lapse-b", 30)];
    expect((await claim(tasks[1]!.task_id, a)).status).toBe(200);
    expect((await claim(tasks[1]!.task_id, b)).status).toBe(409);
    await advance(72 * 3_600_000 + 1_000);
    expect((await task(tasks[1]!.task_id)).status).toBe("open");
    const taken = await claim(tasks[1]!.task_id, b);
    expect(taken.status).toBe(200);
    expect((await call(`/v1/events?type=swarm_task.claimed&subject=${tasks[1]!.task_id}`)).body.events[1].payload.previous_claimant).toBe(
      a.node_id,
    );
    expect((await complete(tasks[1]!.task_id, a)).status).toBe(403);
    const released = await call(`/v1/swarm/tasks/${tasks[1]!.task_id}/release`, { token: b.token, method: "POST" });
    expect([released.status, released.body.status, released.body.claimed_by]).toEqual([200, "open", null]);
    expect((await claim(tasks[1]!.task_id, a)).status).toBe(200);
  });
});

describe("completing a swarm task", () => {
  it("lets only the claimant complete it, with a summary; a bare completion earns nothing until a manager verifies it", async () => {
    const { tasks } = await activeTasks();
    const solver = await eligibleNode("finisher", 30);
    const other = await eligibleNode("bystander", 30);
    const id = tasks[0]!.task_id;
    expect((await complete(id, solver)).status).toBe(409); // not claimed yet
    expect((await claim(id, solver)).status).toBe(200);
    expect((await complete(id, other)).status).toBe(403);
    expect((await complete(id, solver, {})).status).toBe(422);
    expect((await complete(id, solver, { summary: "x", extra: 1 })).status).toBe(422);
    const unknownCommit = await complete(id, solver, { summary: "Done.", commit_sha: "a".repeat(40) });
    expect([unknownCommit.status, unknownCommit.body.reason]).toEqual([409, "unknown_commit"]);

    const done = await complete(id, solver, { summary: "Done: the runner is designed and reviewed." });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      status: "completed",
      completed_by: solver.node_id,
      summary: "Done: the runner is designed and reviewed.",
      commit_sha: null,
      verified_by: null,
    });
    expect((await call(`/v1/nodes/${solver.node_id}`, { token: null })).body.reputation).toBe(30);
    const earned = async () =>
      (await call(`/v1/events?type=node.reputation_changed&subject=${solver.node_id}`)).body.events
        .map((e: any) => e.payload)
        .filter((p: any) => p.source !== "admin"); // the test's own standing, given by hand
    expect(await earned()).toEqual([]);
    // completing twice changes nothing
    expect((await complete(id, solver)).status).toBe(409);

    // a manager's verification is what makes it verified work: credited once, with before and after
    const node = await eligibleNode("verifier-check", 30);
    expect((await call(`/v1/swarm/tasks/${id}/verify`, { token: node.token, body: {} })).status).toBe(403);
    const verified = await call(`/v1/swarm/tasks/${id}/verify`, { body: {} });
    expect([verified.status, verified.body.verified_by]).toEqual([200, "bootstrap-admin"]);
    expect((await call(`/v1/nodes/${solver.node_id}`, { token: null })).body.reputation).toBe(34);
    expect(await earned()).toEqual([
      expect.objectContaining({ source: "task_completed", reference: id, delta: 4, reputation_before: 30, reputation_after: 34 }),
    ]);
    const again = await call(`/v1/swarm/tasks/${id}/verify`, { body: {} });
    expect([again.status, again.body.reason]).toEqual([409, "already_verified"]);
    expect((await call(`/v1/nodes/${solver.node_id}`, { token: null })).body.reputation).toBe(34);
    const open = await call(`/v1/swarm/tasks/${tasks[1]!.task_id}/verify`, { body: {} });
    expect([open.status, open.body.reason]).toEqual([409, "not_completed"]);
  });

  it("completes racing completions once, and racing verifications credit once", async () => {
    const { tasks } = await activeTasks();
    const solver = await eligibleNode("racing-finisher", 30);
    expect((await claim(tasks[2]!.task_id, solver)).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 5 }, () => complete(tasks[2]!.task_id, solver)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const verifications = await Promise.all(
      Array.from({ length: 5 }, () => call(`/v1/swarm/tasks/${tasks[2]!.task_id}/verify`, { body: {} })),
    );
    expect(verifications.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect((await call(`/v1/nodes/${solver.node_id}`, { token: null })).body.reputation).toBe(34);
  });
});

describe("expiry and listing", () => {
  it("expires a council task after 90 days: listed as expired at once, refused, then marked by the tick with an event", async () => {
    const id = await councilTask(90);
    const solver = await eligibleNode("late", 30);
    expect(await task(id)).toMatchObject({ kind: "council", status: "open", project_id: null });
    await advance(90 * 86_400_000 + 1_000);
    expect((await task(id)).status).toBe("expired");
    const refused = await claim(id, solver);
    expect([refused.status, refused.body.reason]).toEqual([409, "expired"]);
    const expired = await call("/v1/swarm/tasks?status=expired&limit=500", { token: null });
    expect(expired.body.tasks.map((t: { task_id: string }) => t.task_id)).toContain(id);
    expect((await projectsTick()).tasks_expired).toBeGreaterThanOrEqual(1);
    expect((await call(`/v1/events?type=swarm_task.expired&subject=${id}`)).body.events).toHaveLength(1);
    expect((await projectsTick()).tasks_expired).toBe(0);
  });

  it("lists tasks publicly with expires_at, filtered by status and project, paged", async () => {
    const { projectId, tasks } = await activeTasks();
    const solver = await eligibleNode("lister", 30);
    expect((await claim(tasks[0]!.task_id, solver)).status).toBe(200);
    const byProject = await call(`/v1/swarm/tasks?project_id=${projectId}`, { token: null });
    expect(byProject.status).toBe(200);
    expect(byProject.body.tasks).toHaveLength(3);
    for (const t of byProject.body.tasks) expect(t.expires_at).toEqual(expect.any(String));
    const open = await call(`/v1/swarm/tasks?project_id=${projectId}&status=open`, { token: null });
    expect(open.body.tasks.map((t: { task_id: string }) => t.task_id).sort()).toEqual([tasks[1]!.task_id, tasks[2]!.task_id].sort());
    const claimed = await call(`/v1/swarm/tasks?project_id=${projectId}&status=claimed`, { token: null });
    expect(claimed.body.tasks.map((t: { task_id: string }) => t.task_id)).toEqual([tasks[0]!.task_id]);
    const page1 = await call(`/v1/swarm/tasks?project_id=${projectId}&limit=2`, { token: null });
    const page2 = await call(`/v1/swarm/tasks?project_id=${projectId}&limit=2&cursor=${page1.body.next_cursor}`, { token: null });
    expect([...page1.body.tasks, ...page2.body.tasks]).toHaveLength(3);
    expect(page2.body.next_cursor).toBeNull();
    expect((await call("/v1/swarm/tasks?status=nope", { token: null })).status).toBe(422);
  });
});
