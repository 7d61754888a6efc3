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

  /** Runs one GitHub call; `expected` decides which failures the caller handles itself. */
  async #call<T>(what: string, run: () => Promise<T>, expected?: (err: unknown) => boolean): Promise<T | { failed: unknown }> {
    try {
      return await run();
    } catch (err) {
      if (expected?.(err) && !(err instanceof AppError)) return { failed: err };
      throw forgeError(err, what, this.#gh.redactor);
    }
  }

  async ensureRepository(raw: RepositoryInput): Promise<ForgeRepository> {
    const input = parse(repositoryInput, raw, "repository");
    const name = this.#repoName(input.name);
    const { octokit } = this.#gh;
    const created = await this.#call(
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
    const repo =
      "failed" in created
        ? (
            (await this.#call("GET /repos/{owner}/{repo}", () =>
              octokit.request("GET /repos/{owner}/{repo}", { owner: this.org, repo: name }),
            )) as {
              data: RepoData;
            }
          ).data
        : created.data;
    return {
      id: Number(repo.id),
      full_name: repo.full_name,
      name: repo.name,
      html_url: repo.html_url,
      default_branch: repo.default_branch ?? "main",
      private: repo.private,
      created: !("failed" in created),
    };
  }

  async contribute(raw: ContributionInput): Promise<ContributionResult> {
    const input = parse(contributionInput, raw, "contribution");
    const repo = this.#repoName(input.repo);
    try {
      return await contributeOnce(this.#gitData(repo), input, this.#maxAttempts);
    } catch (err) {
      throw forgeError(err, "a contribution", this.#gh.redactor);
    }
  }

  async openPullRequest(raw: PullRequestInput): Promise<ForgePullRequest> {
    const input = parse(pullRequestInput, raw, "pull request");
    const repo = this.#repoName(input.repo);
    const { octokit } = this.#gh;
    const base = input.base ?? (await this.#gitData(repo).defaultBranch());
    const findOpen = async () => {
      const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
        owner: this.org,
        repo,
        state: "open",
        head: `${this.org}:${input.branch}`,
        per_page: 10,
      });
      return data[0];
    };
    const existing = await this.#call("GET /repos/{owner}/{repo}/pulls", findOpen);
    if (existing && !("failed" in existing)) return toPull(existing, true);
    const opened = await this.#call(
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
    if (!("failed" in opened)) return toPull(opened.data, false);
    const winner = await this.#call("GET /repos/{owner}/{repo}/pulls", findOpen);
    if (winner && !("failed" in winner)) return toPull(winner, true);
    throw forgeError(opened.failed, "POST /repos/{owner}/{repo}/pulls", this.#gh.redactor);
  }

  /** The Git Data API calls a contribution needs, bound to one repository of the organisation. */
  #gitData(repo: string): GitData {
    const { octokit } = this.#gh;
    const owner = this.org;
    return {
      fullName: `${owner}/${repo}`,
      async defaultBranch() {
        const { data } = await octokit.request("GET /repos/{owner}/{repo}", { owner, repo });
        return data.default_branch;
      },
      async readBranch(branch) {
        try {
          const { data } = await octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { owner, repo, ref: `heads/${branch}` });
          return data.object.sha;
        } catch (err) {
          if (githubStatus(err) === 404) return null;
          throw err;
        }
      },
      async readCommit(sha) {
        const { data } = await octokit.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { owner, repo, commit_sha: sha });
        return { sha: data.sha, tree: data.tree.sha, message: data.message };
      },
      async createBlob(content, encoding) {
        const { data } = await octokit.request("POST /repos/{owner}/{repo}/git/blobs", { owner, repo, content, encoding });
        return data.sha;
      },
      async createTree(baseTree, entries) {
        const { data } = await octokit.request("POST /repos/{owner}/{repo}/git/trees", {
          owner,
          repo,
          base_tree: baseTree,
          tree: entries.map((e) => ({ path: e.path, mode: "100644" as const, type: "blob" as const, sha: e.sha })),
        });
        return data.sha;
      },
      async createCommit(message, tree, parent) {
        const { data } = await octokit.request("POST /repos/{owner}/{repo}/git/commits", { owner, repo, message, tree, parents: [parent] });
        return { sha: data.sha, url: data.html_url };
      },
      async createBranch(branch, sha) {
        try {
          await octokit.request("POST /repos/{owner}/{repo}/git/refs", { owner, repo, ref: `refs/heads/${branch}`, sha });
          return true;
        } catch (err) {
          if (answered(err, 422, /already exists/i)) return false;
          throw err;
        }
      },
      async moveBranch(branch, sha) {
        try {
          await octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", { owner, repo, ref: `heads/${branch}`, sha, force: false });
          return true;
        } catch (err) {
          // Not a fast-forward: the branch moved since it was read. Gone: deleted since then.
          if (answered(err, 422, /fast.forward|does not exist/i)) return false;
          throw err;
        }
      },
    };
  }
}

interface RepoData {
  id: number;
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
