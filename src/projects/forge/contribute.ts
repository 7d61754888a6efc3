import type { z } from "zod";
import { AppError } from "../../lib/errors";
import { attributedMessage } from "../attribution";
import { taskBranch, type contributionInput, type ContributionResult } from "./forge";

/** The Git Data API calls a contribution makes, on one repository (./github.ts binds them). */
export interface GitData {
  /** `org/name` */
  fullName: string;
  defaultBranch(): Promise<string>;
  /** The commit sha the branch points at, or null when there is no such branch. */
  readBranch(branch: string): Promise<string | null>;
  readCommit(sha: string): Promise<{ sha: string; tree: string; message: string }>;
  createBlob(content: string, encoding: "utf-8" | "base64"): Promise<string>;
  createTree(baseTree: string, entries: ReadonlyArray<{ path: string; sha: string }>): Promise<string>;
  createCommit(message: string, tree: string, parent: string): Promise<{ sha: string; url: string }>;
  /** false when the branch already exists (someone created it first). */
  createBranch(branch: string, sha: string): Promise<boolean>;
  /** Fast-forward only; false when the branch moved (or vanished) since it was read. */
  moveBranch(branch: string, sha: string): Promise<boolean>;
}

type Contribution = z.infer<typeof contributionInput>;

/**
 * One contribution as one commit, with a compare-and-swap on the branch:
 *
 * 1. blobs for the files (once: their content does not depend on where they land);
 * 2. read the branch head (or, for a new task branch, the default branch's head);
 * 3. tree on the head's tree, commit on the head;
 * 4. fast-forward the branch to the commit (or create it). If the branch moved in between, GitHub
 *    refuses the non-fast-forward update and we go back to 2 and rebuild on the new head, at most
 *    `maxAttempts` times; then `conflict` (`reason: "branch_moved"`). The commits built for lost
 *    attempts are unreachable and GitHub collects them.
 *
 * A contribution whose tree and message are already the branch head (a retried call whose first
 * run succeeded) returns that commit instead of stacking an empty duplicate on it.
 */
export async function contributeOnce(git: GitData, input: Contribution, maxAttempts: number): Promise<ContributionResult> {
  const branch = input.branch ?? taskBranch(input.task_id);
  const message = attributedMessage(input.message, { ...input.attribution, task_id: input.task_id });
  const entries: { path: string; sha: string }[] = [];
  for (const file of input.files) entries.push({ path: file.path, sha: await git.createBlob(file.content, file.encoding) });

  const result = (sha: string, url: string, parent: string, tree: string, attempts: number, created: boolean, reused: boolean) => ({
    repo: git.fullName,
    branch,
    commit_sha: sha,
    commit_url: url,
    parent_sha: parent,
    tree_sha: tree,
    message,
    attempts,
    created_branch: created,
    reused,
  });

  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const head = await git.readBranch(branch);
    const parentSha = head ?? (await git.readBranch(await git.defaultBranch()));
    if (!parentSha) throw new AppError("forge_failed", `${git.fullName} has no commit on its default branch to start '${branch}' from`);
    const parent = await git.readCommit(parentSha);
    const tree = await git.createTree(parent.tree, entries);
    if (head && tree === parent.tree && parent.message === message) {
      return result(parent.sha, `https://github.com/${git.fullName}/commit/${parent.sha}`, parent.sha, tree, attempt, false, true);
    }
    const commit = await git.createCommit(message, tree, parent.sha);
    const landed = head ? await git.moveBranch(branch, commit.sha) : await git.createBranch(branch, commit.sha);
    if (landed) return result(commit.sha, commit.url, parent.sha, tree, attempt, !head, false);
  }
  throw new AppError(
    "conflict",
    `The branch '${branch}' of ${git.fullName} kept moving; the contribution was not committed after ${maxAttempts} attempts`,
    {
      extra: { reason: "branch_moved", attempts: maxAttempts },
    },
  );
}
