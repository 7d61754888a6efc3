import * as z from "zod";
import { label } from "../../lib/validation";

/**
 * Where official projects live: one organisation on a code host. The GitHub implementation is
 * `createGithubForge` (./github.ts); a project's integration only sees this interface.
 *
 * Every method validates its input with the schemas below (a bad input is a 422 `validation_failed`
 * and sends nothing), refuses anything outside the organisation (`forge_scope`, nothing sent) and
 * reports a failure of the host as `forge_failed` with a redacted detail (no token, key or URL).
 */
export interface Forge {
  /** The organisation (GitHub login) every call is confined to. */
  readonly org: string;
  /**
   * Creates `org/name` with an initial commit on its default branch (a branch needs a commit to
   * branch from), or returns the repository that already has that name (`created: false`), so a
   * retried creation is harmless.
   */
  ensureRepository(input: RepositoryInput): Promise<ForgeRepository>;
  /**
   * One contribution as ONE commit on the task's branch: blobs → tree → commit → ref update. When
   * the branch moved between the read and the update, the commit is rebuilt on the new head and the
   * update retried (bounded; `conflict` with `reason: "branch_moved"` when every attempt lost). A
   * repeat of a contribution already at the head of the branch returns that commit (`reused`).
   */
  contribute(input: ContributionInput): Promise<ContributionResult>;
  /** The open pull request for the branch, or a new one (one per task branch). */
  openPullRequest(input: PullRequestInput): Promise<ForgePullRequest>;
}

/** A GitHub repository name (a bare name; `owner/name` is accepted when owner is the org). */
export const repoRef = z
  .string()
  .min(1)
  .max(140)
  .regex(/^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/)?[A-Za-z0-9._-]{1,100}$/, "must be a repository name or owner/name")
  .refine((ref) => !/(^|\/)\.{1,2}$/.test(ref) && !/\.git$/i.test(ref), "must not be '.', '..' or end in .git");

/** A branch name git accepts (`git check-ref-format --branch`, the subset a task branch needs). */
export const branchName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._\/-]+$/, "may contain letters, digits, '.', '_', '-' and '/'")
  .refine(
    (b) => !b.startsWith("/") && !b.endsWith("/") && !b.includes("//") && !b.includes("..") && !b.endsWith(".lock") && !/(^|\/)\./.test(b),
    "is not a valid git branch name",
  );

/** A path inside the repository: relative, no empty, `.`, `..` or `.git` segment, no backslash. */
export const filePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => p.isWellFormed() && !/[\p{Cc}\\]/u.test(p), "must not contain control characters or backslashes")
  .refine(
    (p) => p.split("/").every((s) => s !== "" && s !== "." && s !== ".." && s.toLowerCase() !== ".git"),
    "must be a relative path without '.', '..', '.git' or empty segments",
  );

const MAX_FILE_CHARS = 1_048_576;

export const contributionFile = z.strictObject({
  path: filePath,
  content: z.string().max(MAX_FILE_CHARS),
  /** `utf-8` (default) or `base64` for binary content. */
  encoding: z.enum(["utf-8", "base64"]).default("utf-8"),
});

export const attributionInput = z.strictObject({
  node_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be a node id"),
  project: label(200),
  council_session_id: label(200),
});

export const contributionInput = z.strictObject({
  repo: repoRef,
  task_id: label(200),
  /** Defaults to `taskBranch(task_id)`. */
  branch: branchName.optional(),
  /** The contributor's message; the attribution block is appended (src/projects/attribution.ts). */
  message: z.string().min(1).max(20_000),
  files: z
    .array(contributionFile)
    .min(1)
    .max(100)
    .refine((files) => new Set(files.map((f) => f.path)).size === files.length, "paths must be unique"),
  attribution: attributionInput,
});

export const repositoryInput = z.strictObject({
  name: repoRef,
  description: z.string().max(350).optional(),
  /** Official projects are open source: public unless said otherwise. */
  private: z.boolean().default(false),
});

export const pullRequestInput = z.strictObject({
  repo: repoRef,
  branch: branchName,
  title: label(256),
  body: z.string().max(65_536).optional(),
  /** Defaults to the repository's default branch. */
  base: branchName.optional(),
});

export type ContributionInput = z.input<typeof contributionInput>;
export type RepositoryInput = z.input<typeof repositoryInput>;
export type PullRequestInput = z.input<typeof pullRequestInput>;

export interface ForgeRepository {
  id: number;
  /** `org/name` */
  full_name: string;
  name: string;
  html_url: string;
  default_branch: string;
  private: boolean;
  /** false when a repository with that name already existed. */
  created: boolean;
}

export interface ContributionResult {
  /** `org/name` */
  repo: string;
  branch: string;
  commit_sha: string;
  commit_url: string;
  /** The commit the contribution was built on. */
  parent_sha: string;
  tree_sha: string;
  /** The full commit message, attribution block included. */
  message: string;
  /** Ref updates tried; more than 1 means the branch moved and the commit was rebuilt. */
  attempts: number;
  /** The task branch did not exist and was created from the default branch. */
  created_branch: boolean;
  /** The same contribution was already the head of the branch; no new commit was made. */
  reused: boolean;
}

export interface ForgePullRequest {
  number: number;
  html_url: string;
  state: "open" | "closed";
  head: string;
  base: string;
  /** An open pull request for the branch existed and is returned instead of a new one. */
  reused: boolean;
}

/** The branch a task's contributions go to. */
export function taskBranch(taskId: string): string {
  const slug = taskId
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/\.{2,}/g, ".")
    .slice(0, 180)
    .replace(/^[.-]+|(\.lock|\.)+$/gi, "");
  return `task/${slug || "task"}`;
}
