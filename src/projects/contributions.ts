import { and, desc, eq } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { projectContributions } from "../db/schema";
import type { Env } from "../env";
import { AppError, type FieldError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { ProjectsConfig } from "./config";
import { contributionFile, taskBranch } from "./forge/forge";
import { projectForge } from "./forge/instance";
import { projectSlug } from "./repository";
import { getProject } from "./store";
import { effectiveStatus, getTask, taskId } from "./swarm-tasks";

/**
 * A contribution as a node sends it (`/v1/projects/:id/contributions`, `/a2a/project/:id/contribute`):
 * files (repository paths: relative, no `.`/`..`/`.git` segment, no backslash; see forge.ts), the
 * commit message, and optionally the task it is for.
 */
export const contributionBody = z.strictObject({
  files: z
    .array(contributionFile)
    .min(1)
    .max(100)
    .refine((files) => new Set(files.map((f) => f.path)).size === files.length, "paths must be unique"),
  message: z.string().min(1).max(20_000),
  task_id: taskId.optional(),
});

/** The branch of contributions made outside any task: one per node. */
export const nodeBranch = (nodeId: string) => `node/${nodeId}`;

/** Decoded size of a file's content in bytes (UTF-8, or what base64 decodes to). */
export function contentBytes(f: { content: string; encoding?: "utf-8" | "base64" }): number {
  if (f.encoding === "base64") {
    const clean = f.content.replace(/\s+/g, "");
    return Math.floor((clean.length * 3) / 4) - (clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0);
  }
  return new TextEncoder().encode(f.content).byteLength;
}

/** The size limits of `[projects]` (files per commit, bytes per file, bytes per commit): the fields over them. */
export function sizeProblems(
  files: readonly { path: string; content: string; encoding?: "utf-8" | "base64" }[],
  config: ProjectsConfig,
): FieldError[] {
  const problems: FieldError[] = [];
  if (files.length > config.max_contribution_files) {
    problems.push({ path: "files", message: `at most ${config.max_contribution_files} files per contribution` });
  }
  let total = 0;
  files.forEach((f, i) => {
    const bytes = contentBytes(f);
    total += bytes;
    if (bytes > config.max_file_bytes)
      problems.push({ path: `files.${i}.content`, message: `at most ${config.max_file_bytes} bytes per file (${bytes})` });
  });
  if (total > config.max_contribution_bytes) {
    problems.push({ path: "files", message: `at most ${config.max_contribution_bytes} bytes per contribution (${total})` });
  }
  return problems;
}

export function contributionView(c: typeof projectContributions.$inferSelect) {
  return {
    contribution_id: c.id,
    project_id: c.projectId,
    task_id: c.taskId,
    node_id: c.nodeId,
    branch: c.branch,
    commit_sha: c.commitSha,
    commit_url: c.commitUrl,
    parent_sha: c.parentSha,
    message: c.message,
    files: c.files,
    attempts: c.attempts,
    pull_request: c.prNumber !== null ? { number: c.prNumber, url: c.prUrl } : null,
    created_at: c.createdAt,
  };
}

export async function listContributions(db: Db, projectId: string, limit = 100) {
  const rows = await db
    .select()
    .from(projectContributions)
    .where(eq(projectContributions.projectId, projectId))
    .orderBy(desc(projectContributions.createdAt), desc(projectContributions.id))
    .limit(limit)
    .all();
  return rows.map(contributionView);
}

/**
 * A node's contribution to an active project: one commit (the Forge's Git Data API calls, with the
 * compare-and-swap retry) on the task's branch (`task/<task_id>`, the task claimed by this node)
 * or the node's own (`node/<node_id>`), its message ending with the attribution block, and the
 * branch's pull request. Recorded with its event; a repeat of the same contribution returns the
 * same commit. Nothing secret is in the record or the answer (the forge redacts its errors).
 */
export async function contribute(
  env: Env,
  db: Db,
  projectId: string,
  nodeId: string,
  input: z.output<typeof contributionBody>,
  now: Date,
  config: ProjectsConfig,
) {
  const tooBig = sizeProblems(input.files, config);
  if (tooBig.length > 0) throw new AppError("payload_too_large", "The contribution is over the size limits", { errors: tooBig });
  const project = await getProject(db, projectId);
  if (project.status !== "active") {
    throw new AppError("conflict", `Contributions go to an active project; this one is ${project.status}`, {
      extra: { reason: "project_not_active" },
    });
  }
  if (project.repoState !== "ready" || !project.repoFullName) {
    throw new AppError(
      "conflict",
      `The project's repository is not ready (${project.repoState ?? "pending"}${project.repoReason ? `: ${project.repoReason}` : ""})`,
      {
        extra: { reason: "repository_not_ready", repository_state: project.repoState },
      },
    );
  }
  let taskTitle: string | null = null;
  if (input.task_id) {
    const task = await getTask(db, input.task_id);
    if (task.projectId !== projectId) throw new AppError("not_found", `swarm task ${input.task_id} is not a task of ${projectId}`);
    const status = effectiveStatus(task, now.toISOString());
    if (status !== "claimed" || task.claimedBy !== nodeId) {
      throw new AppError("forbidden", "A contribution to a task comes from the node that holds its claim", { extra: { status } });
    }
    taskTitle = task.title;
  }
  const forge = await projectForge(env, db);
  const branch = input.task_id ? taskBranch(input.task_id) : nodeBranch(nodeId);
  const result = await forge.contribute({
    repo: project.repoFullName,
    task_id: input.task_id ?? "none",
    branch,
    message: input.message,
    files: input.files,
    attribution: { node_id: nodeId, project: projectSlug(project), council_session_id: project.sessionId ?? "none" },
  });
  const id = newId("contrib");
  const files = input.files.map((f) => ({ path: f.path, bytes: contentBytes(f) }));
  await db.batch([
    db
      .insert(projectContributions)
      .values({
        id,
        projectId,
        taskId: input.task_id ?? null,
        nodeId,
        branch: result.branch,
        commitSha: result.commit_sha,
        commitUrl: result.commit_url,
        parentSha: result.parent_sha,
        message: result.message,
        files,
        attempts: result.attempts,
        createdAt: now.toISOString(),
      })
      .onConflictDoNothing(),
    appendEvent(
      db,
      {
        type: "project.contribution_committed",
        subject: projectId,
        payload: {
          project_id: projectId,
          task_id: input.task_id ?? null,
          node_id: nodeId,
          repo: result.repo,
          branch: result.branch,
          commit_sha: result.commit_sha,
          attempts: result.attempts,
          reused: result.reused,
          files: files.length,
        },
        dedupeKey: `project:${projectId}:commit:${result.commit_sha}`,
      },
      now,
    ),
  ]);
  // The commit is in and recorded; a pull request GitHub refuses now is opened by a repeat of the
  // same contribution (which reuses the commit), so it is reported rather than thrown.
  let pullRequest: { number: number; url: string; reused: boolean } | null = null;
  let pullRequestError: { code: string; detail: string } | null = null;
  try {
    const pr = await forge.openPullRequest({
      repo: project.repoFullName,
      branch: result.branch,
      title: (taskTitle ? `${taskTitle}` : `Contributions from ${nodeId}`).slice(0, 256),
      body: `Official project ${projectSlug(project)}${input.task_id ? `, swarm task ${input.task_id}` : ""}. Commits carry the attribution block of each contributing node.`,
    });
    pullRequest = { number: pr.number, url: pr.html_url, reused: pr.reused };
    await db.batch([
      db
        .update(projectContributions)
        .set({ prNumber: pr.number, prUrl: pr.html_url })
        .where(and(eq(projectContributions.projectId, projectId), eq(projectContributions.commitSha, result.commit_sha))),
      appendEvent(
        db,
        {
          type: "project.pull_request_opened",
          subject: projectId,
          payload: { project_id: projectId, task_id: input.task_id ?? null, branch: result.branch, number: pr.number, url: pr.html_url },
          dedupeKey: `project:${projectId}:pr:${pr.number}`,
        },
        now,
      ),
    ]);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    pullRequestError = { code: err.code, detail: err.detail };
  }
  const row = await db
    .select()
    .from(projectContributions)
    .where(and(eq(projectContributions.projectId, projectId), eq(projectContributions.commitSha, result.commit_sha)))
    .get();
  return {
    ...contributionView(row!),
    repo: result.repo,
    reused: result.reused,
    created_branch: result.created_branch,
    pull_request: pullRequest,
    ...(pullRequestError ? { pull_request_error: pullRequestError } : {}),
  };
}
