import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { advance, progress, runOneJob, session } from "../../factories/council-http";
import { eligibleNode, heartbeat, patchNode, registerNode } from "../../factories/nodes";
import {
  councilDecides,
  councilSeats,
  decompose,
  DECOMPOSITION,
  insertProject,
  project,
  projectProposal,
  projectsTick,
} from "../../factories/projects";

const events = async (subject: string, type = "project.") =>
  (await call(`/v1/events?type=${type}&subject=${subject}&limit=500`)).body.events as { type: string; payload: any }[];

async function proposer(name: string) {
  const node = await registerNode({ name, model_tier: 3 });
  await patchNode(node.node_id, { reputation: 35 });
  await heartbeat(node);
  return node;
}

const setProjects = async (body: Record<string, unknown>) =>
  expect((await call("/v1/config/projects", { method: "PUT", body })).status).toBe(200);

describe("projects through the council", () => {
  it("goes proposed → council_review on proposal, approved on approval, then decomposes (offline: recorded, retried with backoff) and becomes active with a valid model answer", async () => {
    const seats = await councilSeats(5, "seat");
    const author = await proposer("author");
    const { projectId, sessionId } = await councilDecides(author, seats, projectProposal("testing-framework"));

    let p = await project(projectId);
    expect(p).toMatchObject({ status: "approved", session_id: sessionId, proposer_id: author.node_id, name: "testing-framework" });
    // the approval submitted the decomposition job on the default (offline) runtime
    expect(p.decomposition).toMatchObject({ state: "pending", attempts: 1, job_id: expect.stringMatching(/^job_/) });
    const moves = (await events(projectId))
      .filter((e) => e.type === "project.status_changed")
      .map((e) => [e.payload.from, e.payload.to, e.payload.by]);
    expect(moves).toEqual([
      ["proposed", "council_review", "council"],
      ["council_review", "approved", "council"],
    ]);

    // the offline runtime answers with labelled text: the attempt fails honestly, the project stays approved
    const job = await runOneJob(["offline"], (j) => ({
      text: `[offline runtime] ${j.payload.prompt.slice(0, 30)} (sha256:000000000000)`,
      runtime: "offline",
      model: "offline",
    }));
    expect(job.payload.prompt).toContain('"name":"testing-framework"');
    p = await project(projectId);
    expect(p.status).toBe("approved");
    expect(p.decomposition).toMatchObject({
      state: "failed",
      reason: "offline_runtime",
      attempts: 1,
      detail: expect.stringContaining("decomposition_runtime"),
    });
    const next = Date.parse(p.decomposition.next_attempt_at);
    const failedAt = (await events(projectId, "project.decomposition_failed"))[0]!;
    expect(failedAt.payload).toMatchObject({ reason: "offline_runtime", attempt: 1 });

    // the tick does nothing before the backoff (60 s) has passed
    expect((await projectsTick()).decompositions_started).toBe(0);
    // a model runtime configured meanwhile; after the backoff the tick submits attempt 2
    await setProjects({ decomposition_runtime: "claude" });
    await advance(61_000);
    expect(Date.parse((await call("/v1/admin/clock")).body.now)).toBeGreaterThan(next);
    expect((await projectsTick()).decompositions_started).toBe(1);
    p = await project(projectId);
    expect(p.decomposition).toMatchObject({ state: "pending", attempts: 2 });

    // a valid answer: the project becomes active with its tasks, in one step
    await runOneJob(["claude"], () => ({
      text: "```json\n" + JSON.stringify(DECOMPOSITION) + "\n```",
      runtime: "claude",
      model: "claude-sonnet-4",
    }));
    p = await project(projectId);
    expect(p.status).toBe("active");
    expect(p.decomposition).toMatchObject({ state: "done", source: "model", attempts: 2, reason: null });
    expect(p.tasks.map((t: any) => [t.title, t.weight, t.signals, t.status, t.seq])).toEqual([
      ["Design the runner", 0.35, ["design", "runner"], "open", 0],
      ["Implement the fixtures", 0.3, ["fixtures", "cli"], "open", 1],
      ["Write the contributor docs", 0.2, ["docs"], "open", 2],
    ]);
    for (const t of p.tasks) expect(Date.parse(t.expires_at) - Date.parse(t.created_at)).toBe(90 * 86_400_000);
    expect((await events(projectId)).map((e) => e.type)).toEqual(expect.arrayContaining(["project.decomposed", "project.status_changed"]));
    // no forge configured here: the repository waits and says why
    expect(p.repository).toMatchObject({ state: "unconfigured", reason: expect.stringContaining("github_org") });
    await setProjects({});
  });

  it("keeps the project approved with the reason recorded for every kind of invalid model answer, and stops retrying after the last attempt", async () => {
    await setProjects({ decomposition_runtime: "claude", decomposition_max_attempts: 3 });
    const id = await insertProject("approved");
    const answers = [
      "Here is a plan: 1. design 2. build",
      JSON.stringify({ tasks: [{ title: "Only one", signals: ["x"], weight: 0.5 }] }),
      JSON.stringify({ tasks: [DECOMPOSITION.tasks[0], { ...DECOMPOSITION.tasks[0], weight: 0.1 }] }),
    ];
    const reasons = ["not_json", "task_count_out_of_range", "duplicate_titles"];
    for (const [i, text] of answers.entries()) {
      if (i > 0) await advance(10 * 60_000);
      expect((await projectsTick()).decompositions_started).toBe(1);
      await runOneJob(["claude"], () => ({ text, runtime: "claude", model: "claude-sonnet-4" }));
      const p = await project(id);
      expect(p.status).toBe("approved");
      expect(p.tasks).toEqual([]);
      expect(p.decomposition).toMatchObject({ state: "failed", reason: reasons[i], attempts: i + 1 });
    }
    // the third was the last allowed attempt: no next attempt, the tick leaves it alone
    const p = await project(id);
    expect(p.decomposition.next_attempt_at).toBeNull();
    await advance(7 * 86_400_000);
    expect((await projectsTick()).decompositions_started).toBe(0);
    expect((await events(id, "project.decomposition_failed")).map((e) => e.payload.reason)).toEqual(reasons);
    // a hand-made decomposition still lands
    expect((await decompose(id)).status).toBe(200);
    expect((await project(id)).status).toBe("active");
    await setProjects({});
  });

  it("records a failed or dead job as the reason and retries", async () => {
    await setProjects({ decomposition_runtime: "claude" });
    const id = await insertProject("approved");
    await projectsTick();
    const runner = await createRunnerToken();
    const leased = await lease(runner, ["claude"]);
    const res = await call(`/v1/runner/jobs/${leased.job_id}/fail`, {
      token: runner,
      body: { lease_id: leased.lease_id, error: { code: "cli_error", message: "boom" }, retryable: false },
    });
    expect(res.status).toBe(200);
    await waitFor(async () => (await project(id)).decomposition.state === "failed");
    expect((await project(id)).decomposition).toMatchObject({ reason: "job_failed", detail: expect.any(String), attempts: 1 });
    await setProjects({});
  });

  it("returns a tabled project to proposed and archives a rejected one", async () => {
    const seats = await councilSeats(5, "seat2");
    // tabled: nobody seconds within 30 minutes
    const lonely = await proposer("lonely");
    const submitted = await call("/v1/council/proposals", { token: lonely.token, body: projectProposal("lonely-project") });
    expect(submitted.status).toBe(201);
    const tabledProject = (await session(submitted.body.session_id)).project_id;
    expect((await project(tabledProject)).status).toBe("council_review");
    await advance(31 * 60_000);
    await progress();
    expect((await session(submitted.body.session_id)).phase).toBe("tabled");
    expect((await project(tabledProject)).status).toBe("proposed");

    // rejected
    const doubter = await proposer("doubter");
    const { projectId } = await councilDecides(doubter, seats, projectProposal("rejected-project"), "reject");
    const p = await project(projectId);
    expect(p.status).toBe("archived");
    expect(p.decomposition).toBeNull();
    const moves = (await events(projectId)).filter((e) => e.type === "project.status_changed").map((e) => e.payload.to);
    expect(moves).toEqual(["council_review", "archived"]);
  });
});

describe("a veto and its lapse", () => {
  it("returns a vetoed project to proposed (its decomposition's answer is then not used) and decomposes again when the veto lapses", async () => {
    const seats = await councilSeats(5, "seat3");
    const author = await proposer("veto-author");
    const { projectId, sessionId } = await councilDecides(author, seats, projectProposal("vetoed-project"));
    const admin = await createOperator("admin", "veto-admin");
    const ledger = async () =>
      ((await call(`/v1/nodes/${author.node_id}/reputation`, { token: null })).body.entries as any[])
        .filter((e) => e.reference === sessionId)
        .map((e) => [e.source, e.delta])
        .reverse();
    expect(await ledger()).toEqual([["proposal_approved", 3]]);
    expect((await call(`/v1/council/sessions/${sessionId}/veto`, { token: admin, body: { reason: "Emergency review" } })).status).toBe(200);
    expect((await project(projectId)).status).toBe("proposed");
    expect(await ledger()).toEqual([
      ["proposal_approved", 3],
      ["proposal_vetoed", -5],
    ]);

    // the job submitted on approval answers after the veto: recorded, not used
    await runOneJob(["offline"], () => ({ text: JSON.stringify(DECOMPOSITION), runtime: "claude", model: "claude-sonnet-4" }));
    let p = await project(projectId);
    expect(p).toMatchObject({
      status: "proposed",
      tasks: [],
      decomposition: { state: "failed", reason: "project_not_approved", attempts: 1 },
    });

    // unratified for 72 hours: the approval is restored and the decomposition starts again
    await advance(72 * 3_600_000 + 1_000);
    await call("/v1/admin/ticks/council", { method: "POST" });
    p = await project(projectId);
    expect(p.status).toBe("approved");
    expect(p.decomposition).toMatchObject({ state: "pending", attempts: 2 });
    // the lapsed veto gives back what it took; the restored approval credits nobody twice
    expect(await ledger()).toEqual([
      ["proposal_approved", 3],
      ["proposal_vetoed", -5],
      ["veto_lapsed", 5],
    ]);
    const moves = (await events(projectId)).filter((e) => e.type === "project.status_changed").map((e) => [e.payload.from, e.payload.to]);
    expect(moves).toEqual([
      ["proposed", "council_review"],
      ["council_review", "approved"],
      ["approved", "proposed"],
      ["proposed", "approved"],
    ]);
  });
});

describe("hand-made decompositions", () => {
  it("lands a manager's or the proposer's decomposition, validated like a model's; refuses others and invalid ones without changing anything", async () => {
    const author = await eligibleNode("hand-author", 35);
    const other = await eligibleNode("hand-other", 60);
    const id = await insertProject("approved", { proposer: author.node_id });
    const manager = await createOperator("manager", "hand-manager");
    const viewer = await createOperator("viewer", "hand-viewer");

    const bad = await decompose(
      id,
      {
        tasks: [
          { title: "A", signals: ["x"], weight: 0.5 },
          { title: "B", signals: ["x"], weight: 0.5 },
        ],
      },
      manager,
    );
    expect([bad.status, bad.body.code, bad.body.reason]).toEqual([422, "validation_failed", "weights_exceed_limit"]);
    const shape = await decompose(id, { subtasks: [] }, manager);
    expect(shape.status).toBe(422);
    expect((await decompose(id, DECOMPOSITION, other.token)).status).toBe(403);
    expect((await decompose(id, DECOMPOSITION, viewer)).status).toBe(403);
    expect((await project(id)).status).toBe("approved");
    expect((await events(id)).filter((e) => e.type === "project.decomposed")).toEqual([]);

    const ok = await decompose(id, DECOMPOSITION, author.token);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ status: "active", decomposition: { state: "done", source: "node" } });
    expect(ok.body.tasks).toHaveLength(3);
    const again = await decompose(id, DECOMPOSITION, manager);
    expect([again.status, again.body.code]).toEqual([409, "conflict"]);
    expect((await project(id)).tasks).toHaveLength(3);
  });

  it("lets exactly one of racing decompositions land", async () => {
    const id = await insertProject("approved");
    const results = await Promise.all(Array.from({ length: 5 }, () => decompose(id)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect((await project(id)).tasks).toHaveLength(3);
  });
});

describe("lifecycle moves over HTTP", () => {
  it("makes a manager's legal moves with an event each, refuses the rest with 409 illegal_transition, and revokes open tasks on closing", async () => {
    const manager = await createOperator("manager", "life-manager");
    const id = await insertProject("approved");
    const move = (to: string, token: string | undefined = manager) => call(`/v1/projects/${id}/transition`, { token, body: { to } });

    for (const to of ["council_review", "proposed", "active", "approved", "completed"]) {
      const res = await move(to);
      expect([res.status, res.body.code], to).toEqual([409, "illegal_transition"]);
      expect(res.body).toMatchObject({ from: "approved", to, allowed: ["archived"] });
    }
    expect((await move("active")).body.made_by).toEqual(["decomposition"]);
    expect((await move("completed", await createOperator("viewer", "life-viewer"))).status).toBe(403);
    expect((await call(`/v1/projects/${id}/transition`, { token: manager, body: { to: "done" } })).status).toBe(422);

    expect((await decompose(id)).status).toBe(200);
    const completed = await move("completed");
    expect(completed.status).toBe(200);
    expect(completed.body.status).toBe("completed");
    const p = await project(id);
    expect(p.tasks.map((t: any) => t.status)).toEqual(["revoked", "revoked", "revoked"]);
    const revoked = await call(`/v1/events?type=swarm_task.revoked&limit=50`);
    expect(revoked.body.events.filter((e: any) => e.payload.project_id === id)).toHaveLength(3);
    expect((await move("active")).status).toBe(409);
    expect((await move("archived")).status).toBe(200);
    expect((await move("completed")).body).toMatchObject({ code: "illegal_transition", allowed: [] });
    const moves = (await events(id))
      .filter((e) => e.type === "project.status_changed")
      .map((e) => [e.payload.from, e.payload.to, e.payload.by]);
    expect(moves).toEqual([
      ["approved", "active", "decomposition"],
      ["active", "completed", "manager"],
      ["completed", "archived", "manager"],
    ]);
  });

  it("lets one of racing manager moves land; the others are refused and leave one event", async () => {
    const manager = await createOperator("manager", "race-manager");
    const id = await insertProject("approved");
    expect((await decompose(id)).status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => call(`/v1/projects/${id}/transition`, { token: manager, body: { to: "completed" } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect((await events(id)).filter((e) => e.type === "project.status_changed" && e.payload.to === "completed")).toHaveLength(1);
  });

  it("lists projects publicly, newest first, paged and filtered by status", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await insertProject("proposed"));
    const first = await call("/v1/projects?status=proposed&limit=2", { token: null });
    expect(first.status).toBe(200);
    expect(first.body.projects).toHaveLength(2);
    expect(first.body.projects.every((p: any) => p.status === "proposed")).toBe(true);
    const second = await call(`/v1/projects?status=proposed&limit=2&cursor=${first.body.next_cursor}`, { token: null });
    const seen = [...first.body.projects, ...second.body.projects].map((p: any) => p.project_id);
    for (const id of ids) expect(seen).toContain(id);
    expect(new Set(seen).size).toBe(seen.length);
    expect((await call("/v1/projects?cursor=nope", { token: null })).status).toBe(422);
    expect((await call("/v1/projects/proj_0000000000000000", { token: null })).status).toBe(404);
    expect((await call("/v1/projects/not-an-id", { token: null })).status).toBe(422);
  });
});

async function createRunnerToken() {
  const res = await call("/v1/admin/runners", { body: { name: `r-${Math.random().toString(16).slice(2, 8)}` } });
  return res.body.token as string;
}

async function lease(token: string, runtimes: string[]) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const res = await call("/v1/runner/lease", { token, body: { capacity: 1, wait_ms: 1_000, runtimes } });
    if (res.body.jobs[0]) return res.body.jobs[0] as { job_id: string; lease_id: string };
  }
  throw new Error("no job");
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("condition not reached");
}
