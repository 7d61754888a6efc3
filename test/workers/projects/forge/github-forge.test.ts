import { afterEach, describe, expect, it, vi } from "vitest";
import { AppError } from "../../../../src/lib/errors";
import type { ContributionInput } from "../../../../src/projects/forge/forge";
import { createGithubForge } from "../../../../src/projects/forge/github";
import { APP_ID, githubWorld, INSTALLATION_ID, ORG, type GithubStandin } from "../../../factories/github-standin";

let current: GithubStandin | undefined;
async function world(options: Parameters<typeof githubWorld>[0] = {}) {
  const w = await githubWorld(options);
  current = w.standin;
  return w;
}
// Every request the forge sent must be one GitHub's OpenAPI description allows.
afterEach(() => {
  current?.assertClean();
  current = undefined;
});

const attribution = { node_id: "node_a0c28b601d3a6d49", project: "human-welfare-v1", council_session_id: "delib_abc789" };
const contribution = (overrides: Partial<ContributionInput> = {}): ContributionInput => ({
  repo: "human-welfare-v1",
  task_id: "task_clxyz123",
  message: "feat(auth): implement OAuth2 flow",
  files: [
    { path: "src/auth/oauth.ts", content: "export const flow = 'oauth2';\n" },
    { path: "docs/auth.md", content: "# OAuth2\n" },
  ],
  attribution,
  ...overrides,
});

const SEED_MESSAGE =
  "feat(auth): implement OAuth2 flow\n" +
  "\n" +
  "Contributed by: node_a0c28b601d3a6d49\n" +
  "Project: human-welfare-v1\n" +
  "Task: task_clxyz123\n" +
  "Council-Session: delib_abc789\n" +
  "\n" +
  "Co-authored-by: EvoMap-Agent-a0c28 <node_a0c28b601d3a6d49@nodes.noreply.crewplane.dev>\n";

async function errorOf(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe("GitHub forge: repositories", () => {
  it("creates the project repository in the organisation with an initial commit on its default branch", async () => {
    const { standin, forge } = await world();
    const repo = await forge.ensureRepository({ name: "human-welfare-v1", description: "Official project" });

    expect(repo).toEqual({
      id: expect.any(Number),
      full_name: `${ORG}/human-welfare-v1`,
      name: "human-welfare-v1",
      html_url: `https://github.com/${ORG}/human-welfare-v1`,
      default_branch: "main",
      private: false,
      created: true,
    });
    const stored = standin.repo(`${ORG}/human-welfare-v1`)!;
    expect(stored.refs.get("refs/heads/main")).toMatch(/^[0-9a-f]{40}$/);
    // The App first trades its JWT for an installation token, then uses the token.
    expect(standin.requests.map((r) => `${r.operation} [${r.auth}]`)).toEqual([
      "POST /app/installations/{installation_id}/access_tokens [jwt]",
      "POST /orgs/{org}/repos [token]",
    ]);
    expect(standin.sent("POST /orgs/{org}/repos")[0]!.body).toEqual({
      name: "human-welfare-v1",
      description: "Official project",
      private: false,
      auto_init: true,
    });
  });

  it("mints one installation token for concurrent and later calls", async () => {
    const { standin, forge } = await world();
    await Promise.all([forge.ensureRepository({ name: "alpha" }), forge.ensureRepository({ name: "beta" })]);
    await forge.ensureRepository({ name: "gamma" });
    const mints = standin.requests.filter((r) => r.operation === "POST /app/installations/{installation_id}/access_tokens");
    expect(mints).toHaveLength(1);
    expect(standin.requests.filter((r) => r.auth === "token")).toHaveLength(3);
  });

  it("returns the existing repository with created false when the name is already taken", async () => {
    const { standin, forge } = await world();
    const first = await forge.ensureRepository({ name: "human-welfare-v1" });
    const again = await forge.ensureRepository({ name: `${ORG}/human-welfare-v1` });

    expect(again).toEqual({ ...first, created: false });
    expect(standin.repos.size).toBe(1);
  });
});

describe("GitHub forge: contributions", () => {
  it("commits all files as one commit on a new task branch started from the default branch, message and trailers byte for byte", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    const mainHead = repo.refs.get("refs/heads/main")!;

    const result = await forge.contribute(contribution());

    expect(result).toMatchObject({
      repo: `${ORG}/human-welfare-v1`,
      branch: "task/task_clxyz123",
      parent_sha: mainHead,
      attempts: 1,
      created_branch: true,
      reused: false,
      message: SEED_MESSAGE,
      commit_url: `https://github.com/${ORG}/human-welfare-v1/commit/${result.commit_sha}`,
    });
    expect(repo.refs.get("refs/heads/task/task_clxyz123")).toBe(result.commit_sha);
    expect(repo.refs.get("refs/heads/main")).toBe(mainHead);
    const commit = repo.git.get(result.commit_sha, "commit")!;
    expect(commit.message).toBe(SEED_MESSAGE);
    expect(commit.parents).toEqual([mainHead]);
    expect(commit.tree).toBe(result.tree_sha);
    expect(repo.git.readFile(result.commit_sha, "src/auth/oauth.ts")).toBe("export const flow = 'oauth2';\n");
    expect(repo.git.readFile(result.commit_sha, "docs/auth.md")).toBe("# OAuth2\n");
    expect(repo.git.readFile(result.commit_sha, "README.md")).toBe("# human-welfare-v1\n");
    // Git Data API, in order: blobs, the branch (missing), the default branch, its commit, tree, commit, new ref.
    expect(standin.requests.slice(2).map((r) => `${r.method} ${r.pathname}`)).toEqual([
      `POST /repos/${ORG}/human-welfare-v1/git/blobs`,
      `POST /repos/${ORG}/human-welfare-v1/git/blobs`,
      `GET /repos/${ORG}/human-welfare-v1/git/ref/heads%2Ftask%2Ftask_clxyz123`,
      `GET /repos/${ORG}/human-welfare-v1`,
      `GET /repos/${ORG}/human-welfare-v1/git/ref/heads%2Fmain`,
      `GET /repos/${ORG}/human-welfare-v1/git/commits/${mainHead}`,
      `POST /repos/${ORG}/human-welfare-v1/git/trees`,
      `POST /repos/${ORG}/human-welfare-v1/git/commits`,
      `POST /repos/${ORG}/human-welfare-v1/git/refs`,
    ]);
    expect(standin.sent("POST /repos/{owner}/{repo}/git/commits")[0]!.body).toEqual({
      message: SEED_MESSAGE,
      tree: result.tree_sha,
      parents: [mainHead],
    });
  });

  it("fast-forwards an existing task branch with the next contribution", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    const first = await forge.contribute(contribution());
    const second = await forge.contribute(
      contribution({ message: "fix(auth): refresh tokens", files: [{ path: "src/auth/refresh.ts", content: "x\n" }] }),
    );

    expect(second).toMatchObject({ parent_sha: first.commit_sha, created_branch: false, attempts: 1 });
    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    expect(repo.refs.get("refs/heads/task/task_clxyz123")).toBe(second.commit_sha);
    expect(repo.git.readFile(second.commit_sha, "src/auth/oauth.ts")).toBe("export const flow = 'oauth2';\n");
    expect(standin.sent("PATCH /repos/{owner}/{repo}/git/refs/{ref}").map((r) => r.body)).toEqual([
      { sha: second.commit_sha, force: false },
    ]);
  });

  it("stores base64 content as the bytes it encodes", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    const result = await forge.contribute(
      contribution({ files: [{ path: "bin/data.txt", content: btoa("binary\u0001ok"), encoding: "base64" }] }),
    );
    expect(standin.repo(`${ORG}/human-welfare-v1`)!.git.readFile(result.commit_sha, "bin/data.txt")).toBe("binary\u0001ok");
  });

  it("returns the head commit instead of stacking a duplicate when the same contribution is repeated", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    const first = await forge.contribute(contribution());
    const again = await forge.contribute(contribution());

    expect(again).toMatchObject({ commit_sha: first.commit_sha, reused: true });
    expect(standin.sent("POST /repos/{owner}/{repo}/git/commits")).toHaveLength(1);
  });

  it("refuses an invalid contribution with 422 and sends nothing", async () => {
    const { standin, forge } = await world();
    const err = await errorOf(forge.contribute(contribution({ files: [{ path: "../escape.txt", content: "x" }] })));
    expect(err.code).toBe("validation_failed");
    expect(err.errors?.[0]?.path).toBe("files.0.path");
    expect(standin.requests).toHaveLength(0);
  });
});

describe("GitHub forge: the branch moved (compare-and-swap)", () => {
  it("rebuilds the commit on the new head and retries when the branch moved between the read and the update", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    const first = await forge.contribute(contribution());
    let concurrent = "";
    standin.intercept(
      "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
      async ({ standin: s }) => {
        concurrent = await s.pushCommit(`${ORG}/human-welfare-v1`, "task/task_clxyz123", { "notes/other.md": "someone else\n" });
      },
      1,
    );

    const result = await forge.contribute(
      contribution({ message: "feat(auth): scopes", files: [{ path: "src/auth/scopes.ts", content: "s\n" }] }),
    );

    expect(result.attempts).toBe(2);
    expect(result.parent_sha).toBe(concurrent);
    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    const history = repo.git.history(repo.refs.get("refs/heads/task/task_clxyz123")!).map((c) => c.sha);
    expect(history.slice(0, 3)).toEqual([result.commit_sha, concurrent, first.commit_sha]);
    // Nothing the other writer committed is lost, and our files are there.
    expect(repo.git.readFile(result.commit_sha, "notes/other.md")).toBe("someone else\n");
    expect(repo.git.readFile(result.commit_sha, "src/auth/scopes.ts")).toBe("s\n");
    const patches = standin.sent("PATCH /repos/{owner}/{repo}/git/refs/{ref}");
    expect(patches).toHaveLength(2);
    // The blobs were made once; the tree and commit were rebuilt for the second attempt.
    expect(standin.sent("POST /repos/{owner}/{repo}/git/blobs")).toHaveLength(3);
    expect(standin.sent("POST /repos/{owner}/{repo}/git/commits")).toHaveLength(3);
  });

  it("answers 409 conflict with reason branch_moved after the bounded attempts, leaving the other writer's head in place", async () => {
    const { standin, forge } = await world({ maxAttempts: 3 });
    await forge.ensureRepository({ name: "human-welfare-v1" });
    await forge.contribute(contribution());
    let last = "";
    standin.intercept("PATCH /repos/{owner}/{repo}/git/refs/{ref}", async ({ standin: s }) => {
      last = await s.pushCommit(`${ORG}/human-welfare-v1`, "task/task_clxyz123", { [`notes/${crypto.randomUUID()}.md`]: "x\n" });
    });

    const err = await errorOf(forge.contribute(contribution({ message: "feat: never lands", files: [{ path: "a.txt", content: "a" }] })));

    expect(err.code).toBe("conflict");
    expect(err.status).toBe(409);
    expect(err.extra).toEqual({ reason: "branch_moved", attempts: 3 });
    expect(standin.sent("PATCH /repos/{owner}/{repo}/git/refs/{ref}")).toHaveLength(3);
    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    expect(repo.refs.get("refs/heads/task/task_clxyz123")).toBe(last);
    expect(repo.git.history(last).some((c) => c.message.startsWith("feat: never lands"))).toBe(false);
  });

  it("lands both of two contributions racing on one branch, one on top of the other", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    await forge.contribute(contribution());
    standin.barrier("PATCH /repos/{owner}/{repo}/git/refs/{ref}");

    const [a, b] = await Promise.all([
      forge.contribute(contribution({ message: "feat: racer a", files: [{ path: "a.txt", content: "a" }] })),
      forge.contribute(contribution({ message: "feat: racer b", files: [{ path: "b.txt", content: "b" }] })),
    ]);

    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    const head = repo.refs.get("refs/heads/task/task_clxyz123")!;
    const top = repo.git
      .history(head)
      .slice(0, 2)
      .map((c) => c.sha);
    expect(new Set(top)).toEqual(new Set([a.commit_sha, b.commit_sha]));
    expect(repo.git.readFile(head, "a.txt")).toBe("a");
    expect(repo.git.readFile(head, "b.txt")).toBe("b");
    // Both built on the same head; GitHub refused the loser's non-fast-forward update and it rebuilt.
    expect([a.attempts, b.attempts].sort()).toEqual([1, 2]);
    expect(standin.sent("PATCH /repos/{owner}/{repo}/git/refs/{ref}")).toHaveLength(3);
  });

  it("starts the task branch once when two first contributions race to create it", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    standin.barrier("POST /repos/{owner}/{repo}/git/refs");

    const [a, b] = await Promise.all([
      forge.contribute(contribution({ message: "feat: first a", files: [{ path: "a.txt", content: "a" }] })),
      forge.contribute(contribution({ message: "feat: first b", files: [{ path: "b.txt", content: "b" }] })),
    ]);

    const repo = standin.repo(`${ORG}/human-welfare-v1`)!;
    const head = repo.refs.get("refs/heads/task/task_clxyz123")!;
    expect([a.commit_sha, b.commit_sha]).toContain(head);
    expect(repo.git.readFile(head, "a.txt")).toBe("a");
    expect(repo.git.readFile(head, "b.txt")).toBe("b");
    // One created the branch; the other found it existing ("Reference already exists"), rebuilt on it.
    expect([a.created_branch, b.created_branch].sort()).toEqual([false, true]);
    expect([a.attempts, b.attempts].sort()).toEqual([1, 2]);
    expect(
      repo.git
        .history(head)
        .slice(0, 2)
        .map((c) => c.sha)
        .sort(),
    ).toEqual([a.commit_sha, b.commit_sha].sort());
  });
});

describe("GitHub forge: pull requests", () => {
  it("opens one pull request per task branch and returns it again for the next contribution", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    await forge.contribute(contribution());

    const opened = await forge.openPullRequest({
      repo: "human-welfare-v1",
      branch: "task/task_clxyz123",
      title: "task_clxyz123: OAuth2 flow",
      body: "Council task",
    });
    await forge.contribute(contribution({ message: "fix: more", files: [{ path: "more.txt", content: "m" }] }));
    const again = await forge.openPullRequest({
      repo: "human-welfare-v1",
      branch: "task/task_clxyz123",
      title: "task_clxyz123: OAuth2 flow",
    });

    expect(opened).toEqual({
      number: 1,
      html_url: `https://github.com/${ORG}/human-welfare-v1/pull/1`,
      state: "open",
      head: "task/task_clxyz123",
      base: "main",
      reused: false,
    });
    expect(again).toEqual({ ...opened, reused: true });
    expect(standin.sent("POST /repos/{owner}/{repo}/pulls")).toHaveLength(1);
    expect(standin.sent("POST /repos/{owner}/{repo}/pulls")[0]!.body).toEqual({
      title: "task_clxyz123: OAuth2 flow",
      head: "task/task_clxyz123",
      base: "main",
      body: "Council task",
    });
    expect(standin.sent("GET /repos/{owner}/{repo}/pulls")[0]!.query).toEqual({
      state: "open",
      head: `${ORG}:task/task_clxyz123`,
      per_page: "10",
    });
  });

  it("ends with one pull request when two openings for the same branch race", async () => {
    const { standin, forge } = await world();
    await forge.ensureRepository({ name: "human-welfare-v1" });
    await forge.contribute(contribution());
    const open = () => forge.openPullRequest({ repo: "human-welfare-v1", branch: "task/task_clxyz123", title: "OAuth2" });
    standin.barrier("POST /repos/{owner}/{repo}/pulls");

    const [a, b] = await Promise.all([open(), open()]);

    expect(a.number).toBe(b.number);
    expect([a.reused, b.reused].sort()).toEqual([false, true]);
    expect(standin.sent("POST /repos/{owner}/{repo}/pulls")).toHaveLength(2);
    expect(standin.repo(`${ORG}/human-welfare-v1`)!.pulls).toHaveLength(1);
  });
});

describe("GitHub forge: a GitHub that does not answer", () => {
  it("abandons a request after the timeout with 502 forge_failed instead of hanging", async () => {
    const { standin, forge } = await world({ requestTimeoutMs: 200 });
    // GitHub never answers; once the forge gives up, the held request is let go without an answer.
    standin.intercept(
      "POST /orgs/{org}/repos",
      ({ request }) =>
        new Promise<Response>((resolve) => request.signal.addEventListener("abort", () => resolve(new Response(null, { status: 504 })))),
    );

    const err = await errorOf(forge.ensureRepository({ name: "slow" }));

    expect(err.code).toBe("forge_failed");
    expect(err.detail).toBe("GitHub could not be reached for POST /orgs/{org}/repos");
  });
});

describe("GitHub forge: the Worker's own fetch", () => {
  it("sends through the runtime's global fetch when no fetch is injected", async () => {
    const { standin, keys } = await world();
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => standin.fetch(input, init));
    try {
      const forge = createGithubForge({
        org: ORG,
        credentials: { appId: APP_ID, privateKey: keys.privateKeyPem, installationId: INSTALLATION_ID },
      });
      expect((await forge.ensureRepository({ name: "via-global-fetch" })).created).toBe(true);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});
