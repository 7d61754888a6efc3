import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { projects } from "../../../src/db/schema";
import { setForgeTransport } from "../../../src/projects/forge/instance";
import { call } from "../../factories";
import { appKeys, ORG, OTHER_ORG, type GithubStandin } from "../../factories/github-standin";
import { eligibleNode, type TestNode } from "../../factories/nodes";
import { decompose, insertProject, project, projectsTick, useGithubStandin } from "../../factories/projects";

let standin: GithubStandin;
beforeAll(async () => {
  standin = await useGithubStandin();
});
afterAll(() => setForgeTransport(undefined));
// Every request the Worker's forge sent must be one GitHub's OpenAPI description allows.
afterEach(() => standin.assertClean());

/** An active project with its repository made in the stand-in, and a node holding its first task. */
async function activeProject(name: string) {
  const proposer = await eligibleNode(`${name}-proposer`, 35);
  const id = await insertProject("approved", { name, proposer: proposer.node_id, repo_name: name });
  const res = await decompose(id);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const p = await project(id);
  expect(p.status).toBe("active");
  expect(p.repository).toMatchObject({ state: "ready", full_name: `${ORG}/${name}`, url: `https://github.com/${ORG}/${name}` });
  const node = await eligibleNode(`${name}-solver`, 45);
  const task = p.tasks[0];
  expect((await call(`/v1/swarm/tasks/${task.task_id}/claim`, { token: node.token, method: "POST" })).status).toBe(200);
  return { id, p, node, task, proposer };
}

const contributeV1 = (id: string, node: TestNode, body: unknown) => call(`/v1/projects/${id}/contributions`, { token: node.token, body });

describe("contributions through the forge", () => {
  it("commits one contribution as one commit on the task branch with a pull request, message and trailers byte for byte", async () => {
    const { id, p, node, task } = await activeProject("human-welfare-v1");
    const res = await contributeV1(id, node, {
      task_id: task.task_id,
      message: "feat(auth): implement OAuth2 flow",
      files: [
        { path: "src/auth/oauth.ts", content: "export const flow = 'oauth2';\n" },
        { path: "docs/auth.md", content: "# OAuth2\n" },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);

    const short = node.node_id.slice(5, 10);
    const expected =
      "feat(auth): implement OAuth2 flow\n" +
      "\n" +
      `Contributed by: ${node.node_id}\n` +
      "Project: human-welfare-v1\n" +
      `Task: ${task.task_id}\n` +
      `Council-Session: ${p.session_id}\n` +
      "\n" +
      `Co-authored-by: EvoMap-Agent-${short} <${node.node_id}@nodes.noreply.crewplane.dev>\n`;
    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    const head = repo.refs.get(`refs/heads/task/${task.task_id}`)!;
    expect(res.body).toMatchObject({
      project_id: id,
      task_id: task.task_id,
      node_id: node.node_id,
      branch: `task/${task.task_id}`,
      commit_sha: head,
      message: expected,
      attempts: 1,
      reused: false,
      created_branch: true,
      pull_request: { number: expect.any(Number), url: expect.stringContaining(`/${ORG}/human-welfare-v1/pull/`) },
      files: [
        { path: "src/auth/oauth.ts", bytes: 30 },
        { path: "docs/auth.md", bytes: 9 },
      ],
    });
    const commit = repo.git.get(head, "commit")!;
    expect(commit.message).toBe(expected);
    expect(commit.parents).toEqual([repo.refs.get("refs/heads/main")]);
    expect(repo.git.readFile(head, "src/auth/oauth.ts")).toBe("export const flow = 'oauth2';\n");
    expect(repo.pulls).toHaveLength(1);
    expect(repo.pulls[0]).toMatchObject({ head: `task/${task.task_id}`, base: "main", title: task.title });

    // the attribution endpoint gives the same block
    const trailer = await call(`/v1/projects/${id}/attribution?node_id=${node.node_id}&task_id=${task.task_id}`, { token: null });
    expect(trailer.status).toBe(200);
    expect(`feat(auth): implement OAuth2 flow\n\n${trailer.body.trailer}\n`).toBe(expected);

    // recorded, public, with its event
    const listed = await call(`/v1/projects/${id}/contributions`, { token: null });
    expect(listed.body.contributions).toEqual([
      expect.objectContaining({ commit_sha: head, pull_request: { number: res.body.pull_request.number, url: res.body.pull_request.url } }),
    ]);
    const events = await call(`/v1/events?type=project.&subject=${id}`);
    expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(
      expect.arrayContaining(["project.repository_ready", "project.contribution_committed", "project.pull_request_opened"]),
    );

    // a second contribution stacks on the branch and reuses the open pull request
    const second = await contributeV1(id, node, {
      task_id: task.task_id,
      message: "docs: more",
      files: [{ path: "docs/more.md", content: "x\n" }],
    });
    expect(second.status).toBe(201);
    expect(second.body.created_branch).toBe(false);
    expect(second.body.pull_request).toMatchObject({ number: res.body.pull_request.number, reused: true });
    expect(repo.git.get(second.body.commit_sha, "commit")!.parents).toEqual([head]);

    // the same contribution again: the same commit, no new one
    const again = await contributeV1(id, node, {
      task_id: task.task_id,
      message: "docs: more",
      files: [{ path: "docs/more.md", content: "x\n" }],
    });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ commit_sha: second.body.commit_sha, reused: true });
    expect((await call(`/v1/projects/${id}/contributions`, { token: null })).body.contributions).toHaveLength(2);
  });

  it("rebuilds the commit on the new head when the branch moved between the read and the update (compare-and-swap)", async () => {
    const { id, node, task } = await activeProject("cas-project");
    const first = await contributeV1(id, node, { task_id: task.task_id, message: "feat: one", files: [{ path: "a.txt", content: "a\n" }] });
    expect(first.status).toBe(201);
    const branch = `task/${task.task_id}`;
    let moved = "";
    // Someone else pushes to the branch after the forge read its head, before it moves the ref.
    standin.intercept(
      "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
      async () => {
        moved = await standin.pushCommit(`${ORG}/cas-project`, branch, { "b.txt": "concurrent\n" });
      },
      1,
    );
    const res = await contributeV1(id, node, { task_id: task.task_id, message: "feat: two", files: [{ path: "c.txt", content: "c\n" }] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.attempts).toBe(2);
    const repo = standin.repo(`${ORG}/cas-project`)!;
    expect(repo.refs.get(`refs/heads/${branch}`)).toBe(res.body.commit_sha);
    expect(repo.git.get(res.body.commit_sha, "commit")!.parents).toEqual([moved]);
    // nothing the other writer pushed was lost
    expect(repo.git.readFile(res.body.commit_sha, "b.txt")).toBe("concurrent\n");
    expect(repo.git.readFile(res.body.commit_sha, "c.txt")).toBe("c\n");
    expect(repo.git.readFile(res.body.commit_sha, "a.txt")).toBe("a\n");
  });

  it("refuses bad paths, oversized files and contributions from nodes without the claim, changing nothing", async () => {
    const { id, node, task } = await activeProject("guarded-project");
    const before = standin.requests.length;
    for (const path of ["../escape.txt", "/etc/passwd", ".git/config", "src/.git/hooks/pre-commit", "a/./b", "a//b", "a\\b"]) {
      const res = await contributeV1(id, node, { task_id: task.task_id, message: "x", files: [{ path, content: "x" }] });
      expect([res.status, res.body.code, res.body.errors?.[0]?.path], path).toEqual([422, "validation_failed", "files.0.path"]);
    }
    const dup = await contributeV1(id, node, {
      message: "x",
      files: [
        { path: "a", content: "1" },
        { path: "a", content: "2" },
      ],
    });
    expect(dup.status).toBe(422);
    const big = await contributeV1(id, node, {
      task_id: task.task_id,
      message: "x",
      files: [{ path: "big.bin", content: "x".repeat(300_000) }],
    });
    expect([big.status, big.body.code, big.body.errors[0].path]).toEqual([413, "payload_too_large", "files.0.content"]);
    const total = await contributeV1(id, node, {
      task_id: task.task_id,
      message: "x",
      files: Array.from({ length: 4 }, (_, i) => ({ path: `f${i}.txt`, content: "y".repeat(200_000) })),
    });
    expect([total.status, total.body.errors[0].path]).toEqual([413, "files"]);
    const stranger = await eligibleNode("stranger", 45);
    const notMine = await contributeV1(id, stranger, { task_id: task.task_id, message: "x", files: [{ path: "x.txt", content: "x" }] });
    expect([notMine.status, notMine.body.code]).toEqual([403, "forbidden"]);
    const operator = await call(`/v1/projects/${id}/contributions`, { body: { message: "x", files: [{ path: "x", content: "x" }] } });
    expect(operator.status).toBe(403);
    // nothing reached GitHub
    expect(standin.requests.length).toBe(before);
    expect((await call(`/v1/projects/${id}/contributions`, { token: null })).body.contributions).toEqual([]);
  });

  it("puts contributions outside any task on the node's own branch, and refuses projects that are not active", async () => {
    const { id, node } = await activeProject("free-project");
    const res = await contributeV1(id, node, { message: "chore: tidy", files: [{ path: "tidy.txt", content: "t\n" }] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.branch).toBe(`node/${node.node_id}`);
    expect(res.body.message).toContain("\nTask: none\n");
    const proposed = await insertProject("approved");
    const refused = await contributeV1(proposed, node, { message: "x", files: [{ path: "x", content: "x" }] });
    expect([refused.status, refused.body.reason]).toEqual([409, "project_not_active"]);
  });

  it("refuses a repository outside the organisation before anything is sent (forge_scope)", async () => {
    const { id, node } = await activeProject("scoped-project");
    // A row pointing at another owner's repository: the forge must refuse, not follow it.
    await getDb(env.DB)
      .update(projects)
      .set({ repoFullName: `${OTHER_ORG}/scoped-project` })
      .where(eq(projects.id, id));
    const before = standin.requests.length;
    const res = await contributeV1(id, node, { message: "x", files: [{ path: "x.txt", content: "x" }] });
    expect([res.status, res.body.code]).toEqual([403, "forge_scope"]);
    expect(standin.requests.length).toBe(before);
    expect(standin.repo(`${OTHER_ORG}/scoped-project`)).toBeUndefined();
  });

  it("never lets a token or the App's key reach a response or an event", async () => {
    const { id, node, task } = await activeProject("secret-project");
    // GitHub fails a call with a body that echoes a token: the answer must not carry it.
    standin.intercept(
      "POST /repos/{owner}/{repo}/git/blobs",
      () =>
        new Response(
          JSON.stringify({
            message: `Bad credentials for token ${[...standin.tokens.keys()][0]}`,
            documentation_url: "https://docs.github.com",
          }),
          {
            status: 500,
            headers: { "content-type": "application/json" },
          },
        ),
      1,
    );
    const failed = await contributeV1(id, node, { task_id: task.task_id, message: "x", files: [{ path: "x.txt", content: "x" }] });
    expect([failed.status, failed.body.code]).toEqual([502, "forge_failed"]);
    const ok = await contributeV1(id, node, { task_id: task.task_id, message: "x", files: [{ path: "x.txt", content: "x" }] });
    expect(ok.status).toBe(201);

    const keys = await appKeys();
    const secrets = [...standin.tokens.keys(), ...keys.privateKeyPem.split("\n").filter((l) => l.length > 40)];
    expect(secrets.length).toBeGreaterThan(2);
    const events = await call("/v1/events?limit=500");
    const everything = JSON.stringify([
      failed.body,
      ok.body,
      events.body,
      await project(id),
      (await call(`/v1/projects/${id}/contributions`, { token: null })).body,
    ]);
    for (const secret of secrets) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/ghs_[A-Za-z0-9]{20,}/);
  });
});

describe("the repository of an active project", () => {
  it("waits as unconfigured without a forge, says why, and is created by the tick once one is configured", async () => {
    setForgeTransport(undefined);
    await call("/v1/config/projects", { method: "PUT", body: {} });
    try {
      const id = await insertProject("approved", { name: "late-repo" });
      expect((await decompose(id)).status).toBe(200);
      let p = await project(id);
      expect(p.status).toBe("active");
      expect(p.repository).toMatchObject({ state: "unconfigured", reason: expect.stringContaining("github_org"), attempts: 1 });
      // configured now; the tick retries once the backoff has passed
      standin = await useGithubStandin();
      await call("/v1/admin/clock", { body: { advance_ms: 61_000 } });
      const summary = await projectsTick();
      expect(summary.repositories[id]).toBe("ready");
      p = await project(id);
      expect(p.repository).toMatchObject({ state: "ready", full_name: `${ORG}/late-repo`, reason: null });
    } finally {
      standin = await useGithubStandin();
    }
  });
});
