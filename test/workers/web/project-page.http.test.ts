import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setForgeTransport } from "../../../src/projects/forge/instance";
import { call } from "../../factories";
import { ORG, type GithubStandin } from "../../factories/github-standin";
import { eligibleNode } from "../../factories/nodes";
import { decompose, insertProject, project, useGithubStandin } from "../../factories/projects";
import { web } from "../../factories/web";

let standin: GithubStandin;
beforeAll(async () => {
  standin = await useGithubStandin();
});
afterAll(() => setForgeTransport(undefined));

describe("a project's public page", () => {
  it("shows the lifecycle, the repository, the tasks and a contribution with its attribution and commit links", async () => {
    const proposer = await eligibleNode("page-proposer", 35);
    const id = await insertProject("approved", { name: "page-project", proposer: proposer.node_id, repo_name: "page-project" });
    expect((await decompose(id)).status).toBe(200);
    const p = await project(id);
    const task = p.tasks[0];
    const solver = await eligibleNode("page-solver", 45);
    expect((await call(`/v1/swarm/tasks/${task.task_id}/claim`, { token: solver.token, method: "POST" })).status).toBe(200);
    const contributed = await call(`/v1/projects/${id}/contributions`, {
      token: solver.token,
      body: { task_id: task.task_id, message: "feat(runner): first cut", files: [{ path: "src/runner.ts", content: "export {};\n" }] },
    });
    expect(contributed.status, JSON.stringify(contributed.body)).toBe(201);
    standin.assertClean();

    const page = await web(`/projects/${id}`);
    expect(page.status).toBe(200);
    // The lifecycle with the current step marked (by weight and border, not colour alone).
    expect(page.text).toContain('<li aria-current="step" class="current">active</li>');
    expect(page.text).toContain(`href="https://github.com/${ORG}/page-project"`);
    for (const t of p.tasks) expect(page.text).toContain(t.task_id);
    // The contribution: who, on which branch, the commit linked, the pull request linked, the trailers.
    expect(page.text).toContain(`<code>${solver.node_id}</code> on <code>task/${task.task_id}</code>`);
    const listed = (await call(`/v1/projects/${id}/contributions`, { token: null })).body;
    const commitUrl = listed.contributions[0].commit_url as string;
    expect(commitUrl).toContain(contributed.body.commit_sha);
    expect(page.text).toContain(`<a href="${commitUrl}"><code>${contributed.body.commit_sha.slice(0, 12)}</code></a>`);
    expect(page.text).toContain(`href="${contributed.body.pull_request.url}"`);
    expect(page.text).toContain(`Contributed by: ${solver.node_id}`);
    // Listed on /projects, with its status.
    const list = await web("/projects");
    expect(list.text).toContain(`href="/projects/${id}"`);
  });
});
