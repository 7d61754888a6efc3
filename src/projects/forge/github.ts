import type { z } from "zod";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { contributeOnce, type GitData } from "./contribute";
import {
  contributionInput,
  pullRequestInput,
  repositoryInput,
  type ContributionInput,
  type ContributionResult,
  type Forge,
  type ForgePullRequest,
  type ForgeRepository,
  type PullRequestInput,
  type RepositoryInput,
} from "./forge";
import { createGithubClient, type GithubClient, type GithubClientOptions } from "./octokit";
import { forgeError, githubStatus } from "./redact";

export interface GithubForgeOptions extends GithubClientOptions {
  /** Ref updates a contribution may try before giving up with `conflict` (default 4). */
  maxAttempts?: number;
}

function parse<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(input);
  if (!result.success) {
    throw new AppError("validation_failed", `The ${what} is invalid`, { errors: fieldErrorsFromIssues(result.error.issues) });
  }
  return result.data;
}

/** A 4xx GitHub answered with a message containing `phrase` (how GitHub tells its 422s apart). */
function answered(err: unknown, status: number, phrase?: RegExp): boolean {
  if (githubStatus(err) !== status) return false;
  if (!phrase) return true;
  const data = (err as { response?: { data?: { message?: unknown; errors?: unknown } } }).response?.data;
  return phrase.test(JSON.stringify([data?.message ?? "", data?.errors ?? []]));
}

/** The Forge on GitHub's REST API (see ./forge.ts for the contract of each method). */
export class GithubForge implements Forge {
  readonly org: string;
  readonly #gh: GithubClient;
  readonly #maxAttempts: number;

  constructor(options: GithubForgeOptions) {
    this.org = options.org;
    this.#gh = createGithubClient(options);
    this.#maxAttempts = options.maxAttempts ?? 4;
  }

  /** `name` or `org/name` → name; another owner is refused before anything is sent. */
  #repoName(ref: string): string {
    const [owner, name] = ref.includes("/") ? ref.split("/") : [this.org, ref];
    if (owner!.toLowerCase() !== this.org.toLowerCase()) {
      throw new AppError(
        "forge_scope",
        `Refused a GitHub call outside the organisation: owner '${owner}' is not the organisation '${this.org}'`,
      );
    }
    return name!;
  }

  /** One GitHub call; any failure becomes a redacted AppError naming the route. */
  async #run<T>(route: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw forgeError(err, route, this.#gh.redactor);
    }
  }

  /** One GitHub call whose `expected` failures the caller handles (they come back as `failed`). */
  async #attempt<T>(
    route: string,
    call: () => Promise<T>,
    expected: (err: unknown) => boolean,
  ): Promise<{ ok: true; value: T } | { ok: false; failed: unknown }> {
    try {
      return { ok: true, value: await call() };
    } catch (err) {
      if (!(err instanceof AppError) && expected(err)) return { ok: false, failed: err };
      throw forgeError(err, route, this.#gh.redactor);
    }
  }

  async ensureRepository(raw: RepositoryInput): Promise<ForgeRepository> {
    const input = parse(repositoryInput, raw, "repository");
    const name = this.#repoName(input.name);
    const { octokit } = this.#gh;
    const created = await this.#attempt(
      "POST /orgs/{org}/repos",
      () =>
        octokit.request("POST /orgs/{org}/repos", {
          org: this.org,
          name,
          ...(input.description !== undefined ? { description: input.description } : {}),
          private: input.private,
          // A repository without a commit has no branch to start a task branch from.
          auto_init: true,
        }),
      (err) => answered(err, 422, /already exists/i),
    );
    const repo: RepoData = created.ok
      ? created.value.data
      : (await this.#run("GET /repos/{owner}/{repo}", () => octokit.request("GET /repos/{owner}/{repo}", { owner: this.org, repo: name })))
          .data;
    return {
      id: Number(repo.id),
      full_name: repo.full_name,
      name: repo.name,
      html_url: repo.html_url,
      default_branch: repo.default_branch ?? "main",
      private: repo.private,
      created: created.ok,
    };
  }

  async contribute(raw: ContributionInput): Promise<ContributionResult> {
    const input = parse(contributionInput, raw, "contribution");
    return contributeOnce(this.#gitData(this.#repoName(input.repo)), input, this.#maxAttempts);
  }

  async openPullRequest(raw: PullRequestInput): Promise<ForgePullRequest> {
    const input = parse(pullRequestInput, raw, "pull request");
    const repo = this.#repoName(input.repo);
    const { octokit } = this.#gh;
    const base = input.base ?? (await this.#gitData(repo).defaultBranch());
    const findOpen = () =>
      this.#run("GET /repos/{owner}/{repo}/pulls", async () => {
        const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
          owner: this.org,
          repo,
          state: "open",
          head: `${this.org}:${input.branch}`,
          per_page: 10,
        });
        return data[0];
      });
    const existing = await findOpen();
    if (existing) return toPull(existing, true);
    const opened = await this.#attempt(
      "POST /repos/{owner}/{repo}/pulls",
      () =>
        octokit.request("POST /repos/{owner}/{repo}/pulls", {
          owner: this.org,
          repo,
          title: input.title,
          head: input.branch,
          base,
          ...(input.body !== undefined ? { body: input.body } : {}),
        }),
      // Two openings raced: the other one won, and its pull request is the task's.
      (err) => answered(err, 422, /pull request already exists/i),
    );
    if (opened.ok) return toPull(opened.value.data, false);
    const winner = await findOpen();
    if (winner) return toPull(winner, true);
    throw forgeError(opened.failed, "POST /repos/{owner}/{repo}/pulls", this.#gh.redactor);
  }

  /**
   * The Git Data API calls a contribution needs, bound to one repository of the organisation. Each
   * maps its failures to a redacted AppError naming its route; the outcomes the compare-and-swap
   * relies on (branch missing, already created, moved) come back as values instead.
   */
  #gitData(repo: string): GitData {
    const { octokit } = this.#gh;
    const owner = this.org;
    const run = this.#run.bind(this);
    const attempt = this.#attempt.bind(this);
    return {
      fullName: `${owner}/${repo}`,
      defaultBranch: () =>
        run(
          "GET /repos/{owner}/{repo}",
          async () => (await octokit.request("GET /repos/{owner}/{repo}", { owner, repo })).data.default_branch,
        ),
      async readBranch(branch) {
        const route = "GET /repos/{owner}/{repo}/git/ref/{ref}";
        const read = await attempt(
          route,
          () => octokit.request(route, { owner, repo, ref: `heads/${branch}` }),
          (err) => githubStatus(err) === 404,
        );
        return read.ok ? read.value.data.object.sha : null;
      },
      readCommit: (sha) =>
        run("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", async () => {
          const { data } = await octokit.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { owner, repo, commit_sha: sha });
          return { sha: data.sha, tree: data.tree.sha, message: data.message };
        }),
      createBlob: (content, encoding) =>
        run(
          "POST /repos/{owner}/{repo}/git/blobs",
          async () => (await octokit.request("POST /repos/{owner}/{repo}/git/blobs", { owner, repo, content, encoding })).data.sha,
        ),
      createTree: (baseTree, entries) =>
        run("POST /repos/{owner}/{repo}/git/trees", async () => {
          const tree = entries.map((e) => ({ path: e.path, mode: "100644" as const, type: "blob" as const, sha: e.sha }));
          return (await octokit.request("POST /repos/{owner}/{repo}/git/trees", { owner, repo, base_tree: baseTree, tree })).data.sha;
        }),
      createCommit: (message, tree, parent) =>
        run("POST /repos/{owner}/{repo}/git/commits", async () => {
          const { data } = await octokit.request("POST /repos/{owner}/{repo}/git/commits", {
            owner,
            repo,
            message,
            tree,
            parents: [parent],
          });
          return { sha: data.sha, url: data.html_url };
        }),
      async createBranch(branch, sha) {
        const route = "POST /repos/{owner}/{repo}/git/refs";
        const created = await attempt(
          route,
          () => octokit.request(route, { owner, repo, ref: `refs/heads/${branch}`, sha }),
          (err) => answered(err, 422, /already exists/i),
        );
        return created.ok;
      },
      async moveBranch(branch, sha) {
        const route = "PATCH /repos/{owner}/{repo}/git/refs/{ref}";
        // Not a fast-forward: the branch moved since it was read. Gone: deleted since then.
        const moved = await attempt(
          route,
          () => octokit.request(route, { owner, repo, ref: `heads/${branch}`, sha, force: false }),
          (err) => answered(err, 422, /fast.forward|does not exist/i),
        );
        return moved.ok;
      },
    };
  }
}

interface RepoData {
  id: number | bigint;
  full_name: string;
  name: string;
  html_url: string;
  default_branch?: string;
  private: boolean;
}

interface PullData {
  number: number;
  html_url: string;
  state: string;
  head: { ref: string };
  base: { ref: string };
}

function toPull(pull: PullData, reused: boolean): ForgePullRequest {
  return {
    number: pull.number,
    html_url: pull.html_url,
    state: pull.state === "closed" ? "closed" : "open",
    head: pull.head.ref,
    base: pull.base.ref,
    reused,
  };
}

/** A Forge for `org` on GitHub, authenticated as the App installation. */
export function createGithubForge(options: GithubForgeOptions): Forge {
  return new GithubForge(options);
}
