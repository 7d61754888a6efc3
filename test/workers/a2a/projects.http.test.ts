import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { setForgeTransport } from "../../../src/projects/forge/instance";
import { call } from "../../factories";
import { a2a, helloNode } from "../../factories/a2a";
import { ORG, type GithubStandin } from "../../factories/github-standin";
import { patchNode, type TestNode } from "../../factories/nodes";
import { DECOMPOSITION, insertProject, PLAN, project, useGithubStandin } from "../../factories/projects";

let standin: GithubStandin;
beforeAll(async () => {
  standin = await useGithubStandin();
});
afterAll(() => setForgeTransport(undefined));
afterEach(() => standin.assertClean());

async function node(reputation: number, model = "claude-sonnet-4"): Promise<TestNode> {
  const n = await helloNode(model);
  await patchNode(n.node_id, { reputation });
  await a2a("/heartbeat", { sender_id: n.node_id }, n.token);
  return n;
}

describe("official projects through /a2a", () => {
  it("proposes a project to the council: the project is under review with the repository name asked for", async () => {
    for (let i = 0; i < 5; i++) await node(50 + i);
    const author = await node(35);
    const res = await a2a(
      "/project/propose",
      {
        sender_id: author.node_id,
        title: "Official project: shared testing framework",
        description: "A shared testing framework for the swarm.",
        repo_name: "swarm-testing",
        plan: PLAN,
      },
      author.token,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      deliberation_id: expect.stringMatching(/^delib_/),
      project_id: expect.stringMatching(/^proj_/),
      status: "seconding",
      proposal_type: "project_proposal",
    });
    const p = (await a2a(`/project/${res.body.project_id}`)).body;
    expect(p).toMatchObject({
      status: "council_review",
      name: "swarm-testing",
      proposer_id: author.node_id,
      session_id: res.body.deliberation_id,
    });
    expect(p).toEqual((await call(`/v1/projects/${res.body.project_id}`, { token: null })).body);
    const proposal = (await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null })).body;
    expect(proposal).toMatchObject({ kind: "project", body: PLAN, project: { name: "swarm-testing", repo_name: "swarm-testing" } });
    const listed = (await a2a("/project/list?status=council_review")).body.projects.map((x: { project_id: string }) => x.project_id);
    expect(listed).toContain(res.body.project_id);
    const bad = await a2a(
      "/project/propose",
      { sender_id: author.node_id, title: "Official project: x", description: "d", repo_name: "../etc", plan: PLAN },
      author.token,
    );
    expect([bad.status, bad.body.errors.map((e: { path: string }) => e.path)]).toEqual([422, expect.arrayContaining(["repo_name"])]);
  });

  it("takes the proposer's decomposition, then claims, contributes and completes tasks, the same records /v1 shows", async () => {
    const author = await node(35);
    const solver = await node(30);
    const id = await insertProject("approved", { name: "a2a-project", proposer: author.node_id, repo_name: "a2a-project" });

    const notMine = await a2a(
      "/task/propose-decomposition",
      { node_id: solver.node_id, project_id: id, subtasks: DECOMPOSITION.tasks },
      solver.token,
    );
    expect(notMine.status).toBe(403);
    const invalid = await a2a(
      "/task/propose-decomposition",
      { node_id: author.node_id, task_id: id, subtasks: [DECOMPOSITION.tasks[0]] },
      author.token,
    );
    expect([invalid.status, invalid.body.reason]).toEqual([422, "task_count_out_of_range"]);
    const noProject = await a2a(
      "/task/propose-decomposition",
      { node_id: author.node_id, task_id: "task_0000000000000000", subtasks: [] },
      author.token,
    );
    expect([noProject.status, noProject.body.errors[0].path]).toEqual([422, "project_id"]);
    // EvoMap's field name for the thing decomposed is task_id; a project id there works
    const decomposed = await a2a(
      "/task/propose-decomposition",
      { node_id: author.node_id, task_id: id, subtasks: DECOMPOSITION.tasks },
      author.token,
    );
    expect(decomposed.status, JSON.stringify(decomposed.body)).toBe(200);
    expect(decomposed.body).toMatchObject({ project_id: id, status: "active" });
    expect(decomposed.body.subtasks).toHaveLength(3);
    const tasks = (await a2a(`/project/${id}/tasks`)).body.tasks;
    expect(tasks.map((t: { weight: number }) => t.weight)).toEqual([0.35, 0.3, 0.2]);
    expect((await project(id)).repository).toMatchObject({ state: "ready", full_name: `${ORG}/a2a-project` });

    // a newcomer (reputation 10) may hold one project task: the way it earns verified work
    const newcomer = await helloNode();
    const first = await a2a("/task/claim", { node_id: newcomer.node_id, task_id: tasks[2].task_id }, newcomer.token);
    expect([first.status, first.body.claimed_by]).toEqual([200, newcomer.node_id]);
    const more = await a2a("/task/claim", { node_id: newcomer.node_id, task_id: tasks[1].task_id }, newcomer.token);
    expect([more.status, more.body.reason]).toEqual([409, "holding_limit"]);
    const claimed = await a2a("/task/claim", { node_id: solver.node_id, task_id: tasks[0].task_id }, solver.token);
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({ status: "claimed", claimed_by: solver.node_id });
    const spoofed = await a2a("/task/claim", { node_id: solver.node_id, task_id: tasks[1].task_id }, author.token);
    expect([spoofed.status, spoofed.body.reason]).toEqual([401, "node_secret_invalid"]);

    const contributed = await a2a(
      `/project/${id}/contribute`,
      {
        sender_id: solver.node_id,
        task_id: tasks[0].task_id,
        message: "feat: the runner's design",
        files: [{ path: "docs/runner.md", content: "# Runner\n" }],
      },
      solver.token,
    );
    expect(contributed.status, JSON.stringify(contributed.body)).toBe(201);
    expect(contributed.body.message).toContain(`\nContributed by: ${solver.node_id}\nProject: a2a-project\nTask: ${tasks[0].task_id}\n`);
    expect(standin.repo(`${ORG}/a2a-project`)!.refs.get(`refs/heads/task/${tasks[0].task_id}`)).toBe(contributed.body.commit_sha);
    const bad = await a2a(
      `/project/${id}/contribute`,
      { sender_id: solver.node_id, message: "x", files: [{ path: "../x", content: "x" }] },
      solver.token,
    );
    expect([bad.status, bad.body.errors[0].path]).toEqual([422, "files.0.path"]);

    const done = await a2a(
      "/task/complete",
      { node_id: solver.node_id, task_id: tasks[0].task_id, summary: "Designed.", commit_sha: contributed.body.commit_sha },
      solver.token,
    );
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: "completed", commit_sha: contributed.body.commit_sha, completed_by: solver.node_id });

    // the facade's views are the /v1 records
    expect((await a2a(`/project/${id}/contributions`)).body).toEqual(
      (await call(`/v1/projects/${id}/contributions`, { token: null })).body,
    );
    expect((await a2a(`/task/${tasks[0].task_id}`)).body).toEqual(
      (await call(`/v1/swarm/tasks/${tasks[0].task_id}`, { token: null })).body,
    );
    expect((await a2a(`/task/list?project_id=${id}&status=open`)).body.tasks).toHaveLength(1);
  });
});
