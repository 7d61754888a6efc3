import type { ImplementedOperation } from "./contract";
import type { GitStore, Person, TreeEntry } from "./git";
import { documented, githubError, type Answer } from "./shapes";
import type { GithubStandin } from "./standin";

/**
 * What the stand-in answers for each implemented operation, with GitHub's behaviour where the
 * forge depends on it: `auto_init` repositories, 409 for an empty repository, 422 "Reference
 * already exists", 422 "Update is not a fast forward" (a real ancestry check), 422 "A pull request
 * already exists for owner:branch." and "No commits between …".
 */

export interface PullState {
  number: number;
  title: string;
  body: string | null;
  head: string;
  base: string;
  state: "open" | "closed";
  createdAt: string;
}

export interface RepoState {
  id: number;
  owner: string;
  name: string;
  description: string | null;
  private: boolean;
  defaultBranch: string;
  createdAt: string;
  git: GitStore;
  /** `refs/heads/main` → commit sha */
  refs: Map<string, string>;
  pulls: PullState[];
}

export interface HandlerContext {
  standin: GithubStandin;
  params: Record<string, string>;
  query: URLSearchParams;
  body: any;
  /** The organisation of the installation token the request carried. */
  authOrg: string | null;
}

type Handler = (ctx: HandlerContext) => Promise<Answer>;

const API = "https://api.github.com";
const WEB = "https://github.com";
const BOT: Omit<Person, "date"> = { name: "crewplane-forge[bot]", email: "1+crewplane-forge[bot]@users.noreply.github.com" };

const fullName = (repo: RepoState) => `${repo.owner}/${repo.name}`;
const nodeId = (kind: string, id: string | number) => btoa(`${kind}:${id}`).replace(/=+$/, "");

/** The repository of `{owner}/{repo}`, visible only with a token of its organisation (else 404). */
function visibleRepo(ctx: HandlerContext): RepoState | Answer {
  const repo = ctx.standin.repo(`${ctx.params.owner}/${ctx.params.repo}`);
  if (!repo || !ctx.authOrg || ctx.authOrg.toLowerCase() !== repo.owner.toLowerCase()) return githubError(404, "Not Found");
  return repo;
}
const isAnswer = (x: unknown): x is Answer => typeof x === "object" && x !== null && "status" in x && "body" in x;

function ownerShape(login: string, id: number) {
  const path = encodeURIComponent(login);
  return { login, id, node_id: nodeId("Organization", id), type: "Organization", url: `${API}/users/${path}`, html_url: `${WEB}/${path}` };
}

function repoShape(repo: RepoState) {
  const name = fullName(repo);
  return {
    id: repo.id,
    node_id: nodeId("Repository", repo.id),
    name: repo.name,
    full_name: name,
    owner: ownerShape(repo.owner, 1),
    private: repo.private,
    visibility: repo.private ? "private" : "public",
    description: repo.description,
    fork: false,
    language: null,
    has_discussions: false,
    default_branch: repo.defaultBranch,
    html_url: `${WEB}/${name}`,
    url: `${API}/repos/${name}`,
    created_at: repo.createdAt,
    updated_at: repo.createdAt,
    pushed_at: repo.createdAt,
    template_repository: undefined,
    parent: undefined,
    source: undefined,
    organization: undefined,
    license: null,
  };
}

function refShape(repo: RepoState, ref: string, sha: string) {
  return {
    ref,
    node_id: nodeId("Ref", ref),
    url: `${API}/repos/${fullName(repo)}/git/${ref}`,
    object: { type: "commit", sha, url: `${API}/repos/${fullName(repo)}/git/commits/${sha}` },
  };
}

function commitShape(repo: RepoState, sha: string) {
  const c = repo.git.get(sha, "commit")!;
  const name = fullName(repo);
  return {
    sha,
    node_id: nodeId("Commit", sha),
    url: `${API}/repos/${name}/git/commits/${sha}`,
    html_url: `${WEB}/${name}/commit/${sha}`,
    author: c.author,
    committer: c.committer,
    message: c.message,
    tree: { sha: c.tree, url: `${API}/repos/${name}/git/trees/${c.tree}` },
    parents: c.parents.map((p) => ({ sha: p, url: `${API}/repos/${name}/git/commits/${p}`, html_url: `${WEB}/${name}/commit/${p}` })),
    verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null },
  };
}

function pullShape(repo: RepoState, pull: PullState) {
  const name = fullName(repo);
  const branchShape = (ref: string) => ({
    label: `${repo.owner}:${ref}`,
    ref,
    sha: repo.refs.get(`refs/heads/${ref}`) ?? "",
    repo: repoShape(repo),
    user: ownerShape(repo.owner, 1),
  });
  return {
    id: repo.id * 1000 + pull.number,
    node_id: nodeId("PullRequest", `${repo.id}/${pull.number}`),
    number: pull.number,
    state: pull.state,
    title: pull.title,
    body: pull.body,
    html_url: `${WEB}/${name}/pull/${pull.number}`,
    url: `${API}/repos/${name}/pulls/${pull.number}`,
    head: branchShape(pull.head),
    base: branchShape(pull.base),
    created_at: pull.createdAt,
    updated_at: pull.createdAt,
    closed_at: null,
    merged_at: null,
    merge_commit_sha: null,
    draft: false,
    locked: false,
    user: { ...ownerShape("crewplane-forge[bot]", 2), type: "Bot" },
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    labels: [],
    milestone: null,
    auto_merge: null,
    active_lock_reason: null,
  };
}

const person = (given: { name?: string; email?: string; date?: string } | undefined): Person => ({
  name: given?.name ?? BOT.name,
  email: given?.email ?? BOT.email,
  date: given?.date ?? new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
});

function decodeContent(content: string, encoding: string | undefined): Uint8Array | null {
  if (encoding === "base64") {
    try {
      return Uint8Array.from(atob(content.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
    } catch {
      return null;
    }
  }
  return new TextEncoder().encode(content);
}

export const HANDLERS: Record<ImplementedOperation, Handler> = {
  async "POST /app/installations/{installation_id}/access_tokens"({ standin }) {
    const { token, expiresAt } = standin.mintToken();
    return {
      status: 201,
      body: documented("POST /app/installations/{installation_id}/access_tokens", 201, {
        token,
        expires_at: expiresAt,
        permissions: { administration: "write", contents: "write", metadata: "read", pull_requests: "write" },
        repository_selection: "all",
        repositories: undefined,
      }),
    };
  },

  async "POST /orgs/{org}/repos"(ctx) {
    const org = ctx.standin.orgs.find((o) => o.toLowerCase() === ctx.params.org!.toLowerCase());
    if (!org) return githubError(404, "Not Found");
    if (!ctx.authOrg || ctx.authOrg.toLowerCase() !== org.toLowerCase()) return githubError(403, "Resource not accessible by integration");
    const repo = await ctx.standin.buildRepository(org, ctx.body.name, { description: ctx.body.description, private: ctx.body.private });
    if (!ctx.body.auto_init) repo.refs.clear();
    // Checked and registered with no await in between, so racing creations get one repository.
    if (ctx.standin.repo(`${org}/${ctx.body.name}`)) {
      return githubError(422, "Repository creation failed.", [
        { resource: "Repository", code: "custom", field: "name", message: "name already exists on this account" },
      ]);
    }
    ctx.standin.repos.set(`${org}/${ctx.body.name}`.toLowerCase(), repo);
    return { status: 201, body: documented("POST /orgs/{org}/repos", 201, repoShape(repo), fullName(repo)) };
  },

  async "GET /repos/{owner}/{repo}"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    return { status: 200, body: documented("GET /repos/{owner}/{repo}", 200, repoShape(repo), fullName(repo)) };
  },

  async "GET /repos/{owner}/{repo}/git/ref/{ref}"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    if (repo.refs.size === 0) return githubError(409, "Git Repository is empty.");
    const ref = `refs/${ctx.params.ref}`;
    const sha = repo.refs.get(ref);
    if (!sha) return githubError(404, "Not Found");
    return { status: 200, body: documented("GET /repos/{owner}/{repo}/git/ref/{ref}", 200, refShape(repo, ref, sha), fullName(repo)) };
  },

  async "POST /repos/{owner}/{repo}/git/refs"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const { ref, sha } = ctx.body as { ref: string; sha: string };
    if (!/^refs\/[^/]+\/.+/.test(ref)) return githubError(422, "Reference name must start with 'refs/' and have at least two slashes.");
    if (!repo.git.get(sha, "commit")) return githubError(422, "Object does not exist");
    if (repo.refs.has(ref)) return githubError(422, "Reference already exists");
    repo.refs.set(ref, sha);
    return { status: 201, body: documented("POST /repos/{owner}/{repo}/git/refs", 201, refShape(repo, ref, sha), fullName(repo)) };
  },

  async "PATCH /repos/{owner}/{repo}/git/refs/{ref}"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const ref = `refs/${ctx.params.ref}`;
    const { sha, force } = ctx.body as { sha: string; force?: boolean };
    const current = repo.refs.get(ref);
    if (!current) return githubError(422, "Reference does not exist");
    if (!repo.git.get(sha, "commit")) return githubError(422, "Object does not exist");
    // Check and set with no await in between: this is the compare-and-swap GitHub offers.
    if (!force && !repo.git.isAncestor(current, sha)) return githubError(422, "Update is not a fast forward");
    repo.refs.set(ref, sha);
    return { status: 200, body: documented("PATCH /repos/{owner}/{repo}/git/refs/{ref}", 200, refShape(repo, ref, sha), fullName(repo)) };
  },

  async "POST /repos/{owner}/{repo}/git/blobs"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const bytes = decodeContent(ctx.body.content, ctx.body.encoding);
    if (!bytes) return githubError(422, "Invalid base64 content");
    const sha = await repo.git.putBlob(bytes);
    return { status: 201, body: { url: `${API}/repos/${fullName(repo)}/git/blobs/${sha}`, sha } };
  },

  async "POST /repos/{owner}/{repo}/git/trees"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const { base_tree: baseTree, tree } = ctx.body as {
      base_tree?: string;
      tree: Array<{ path: string; mode: string; type: TreeEntry["type"]; sha?: string | null; content?: string }>;
    };
    if (baseTree && !repo.git.get(baseTree, "tree"))
      return githubError(422, "Invalid tree info", [{ resource: "Tree", code: "invalid", field: "base_tree" }]);
    const flat = baseTree ? repo.git.flatten(baseTree) : new Map<string, Omit<TreeEntry, "name">>();
    for (const entry of tree) {
      if (entry.sha === null) flat.delete(entry.path);
      else if (entry.content !== undefined)
        flat.set(entry.path, { mode: entry.mode, type: "blob", sha: await repo.git.putBlob(new TextEncoder().encode(entry.content)) });
      else if (entry.sha && repo.git.get(entry.sha, entry.type))
        flat.set(entry.path, { mode: entry.mode, type: entry.type, sha: entry.sha });
      else return githubError(422, "Invalid tree info", [{ resource: "Tree", code: "invalid", field: "tree.sha" }]);
    }
    const sha = await repo.git.buildTree(flat);
    const top = repo.git.get(sha, "tree")!.entries.map((e) => ({
      path: e.name,
      mode: e.mode,
      type: e.type,
      sha: e.sha,
      url: `${API}/repos/${fullName(repo)}/git/${e.type === "tree" ? "trees" : "blobs"}/${e.sha}`,
      ...(e.type === "blob" ? { size: repo.git.get(e.sha, "blob")!.content.length } : {}),
    }));
    return { status: 201, body: { sha, url: `${API}/repos/${fullName(repo)}/git/trees/${sha}`, tree: top, truncated: false } };
  },

  async "GET /repos/{owner}/{repo}/git/commits/{commit_sha}"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    if (!repo.git.get(ctx.params.commit_sha!, "commit")) return githubError(404, "Not Found");
    return {
      status: 200,
      body: documented(
        "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
        200,
        commitShape(repo, ctx.params.commit_sha!),
        fullName(repo),
      ),
    };
  },

  async "POST /repos/{owner}/{repo}/git/commits"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const body = ctx.body as { message: string; tree: string; parents?: string[]; author?: Person; committer?: Person };
    if (!repo.git.get(body.tree, "tree")) return githubError(422, "Tree SHA does not exist");
    const parents = body.parents ?? [];
    if (parents.some((p) => !repo.git.get(p, "commit"))) return githubError(422, "Parent SHA does not exist or is not a commit object");
    const author = person(body.author);
    const sha = await repo.git.putCommit({
      tree: body.tree,
      parents,
      message: body.message,
      author,
      committer: body.committer ? person(body.committer) : author,
    });
    return { status: 201, body: documented("POST /repos/{owner}/{repo}/git/commits", 201, commitShape(repo, sha), fullName(repo)) };
  },

  async "GET /repos/{owner}/{repo}/pulls"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const state = ctx.query.get("state") ?? "open";
    const head = ctx.query.get("head");
    const base = ctx.query.get("base");
    const perPage = Number(ctx.query.get("per_page") ?? 30);
    const pulls = repo.pulls
      .filter((p) => state === "all" || p.state === state)
      .filter((p) => !head || `${repo.owner}:${p.head}`.toLowerCase() === head.toLowerCase() || (!head.includes(":") && p.head === head))
      .filter((p) => !base || p.base === base)
      .slice(0, perPage);
    return {
      status: 200,
      body: pulls.map((p) => documented("GET /repos/{owner}/{repo}/pulls", 200, pullShape(repo, p), fullName(repo))),
    };
  },

  async "POST /repos/{owner}/{repo}/pulls"(ctx) {
    const repo = visibleRepo(ctx);
    if (isAnswer(repo)) return repo;
    const { title, head: rawHead, base, body } = ctx.body as { title: string; head: string; base: string; body?: string };
    const [headOwner, head] = rawHead.includes(":") ? (rawHead.split(":") as [string, string]) : [repo.owner, rawHead];
    const invalid = (field: string) => githubError(422, "Validation Failed", [{ resource: "PullRequest", field, code: "invalid" }]);
    if (headOwner.toLowerCase() !== repo.owner.toLowerCase() || !repo.refs.has(`refs/heads/${head}`)) return invalid("head");
    if (!repo.refs.has(`refs/heads/${base}`)) return invalid("base");
    if (repo.pulls.some((p) => p.state === "open" && p.head === head && p.base === base)) {
      return githubError(422, "Validation Failed", [
        { resource: "PullRequest", code: "custom", message: `A pull request already exists for ${repo.owner}:${head}.` },
      ]);
    }
    const headSha = repo.refs.get(`refs/heads/${head}`)!;
    const baseSha = repo.refs.get(`refs/heads/${base}`)!;
    if (repo.git.isAncestor(headSha, baseSha)) {
      return githubError(422, "Validation Failed", [
        { resource: "PullRequest", code: "custom", message: `No commits between ${base} and ${head}` },
      ]);
    }
    const pull: PullState = {
      number: repo.pulls.length + 1,
      title,
      body: body ?? null,
      head,
      base,
      state: "open",
      createdAt: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    };
    repo.pulls.push(pull);
    return { status: 201, body: documented("POST /repos/{owner}/{repo}/pulls", 201, pullShape(repo, pull), fullName(repo)) };
  },
};
