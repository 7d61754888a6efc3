import { and, eq, inArray, ne, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { isUniqueFailure } from "../db/guard";
import { councilProposals, projects } from "../db/schema";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { backoffMs } from "./decomposition";
import { slugRepoName } from "./repo-name";
import { projectForge } from "./forge/instance";
import type { ProjectRow } from "./store";

const RETRY_BASE_MS = 60_000;
const RETRY_MAX_MS = 3_600_000;
// How long one attempt holds the project (so the tick and an activation never both call GitHub).
const ATTEMPT_LEASE_MS = 120_000;

/** The repository a project asks for: the proposal's `repo_name`, else its name made a slug, else its id. */
export function wantedRepoName(p: Pick<ProjectRow, "id" | "name">, proposalProject: { repo_name?: string } | null | undefined): string {
  return proposalProject?.repo_name ?? (slugRepoName(p.name) || p.id.replace(/_/g, "-"));
}

/** The short name of a project as the attribution block shows it (`Project: human-welfare-v1`). */
export function projectSlug(p: Pick<ProjectRow, "id" | "name" | "repoFullName">): string {
  return p.repoFullName?.split("/")[1] ?? (slugRepoName(p.name) || p.id);
}

/**
 * Gives an active project its repository in the organisation (issue 9: "on active the project gets
 * a repository"). One attempt at a time per project (a lease in the row); failures are recorded on
 * the project (`repository.state` `unconfigured` or `failed`, with the reason) and retried by the
 * `projects` tick with backoff. Never throws for GitHub's sake: the caller is an activation or a tick.
 */
export async function ensureProjectRepository(env: Env, db: Db, projectId: string, now: Date): Promise<{ state: string } | null> {
  const at = now.toISOString();
  const [claimed] = await db
    .update(projects)
    .set({ repoNextAt: new Date(now.getTime() + ATTEMPT_LEASE_MS).toISOString(), repoAttempts: sql`${projects.repoAttempts} + 1` })
    .where(
      and(
        eq(projects.id, projectId),
        inArray(projects.status, ["active", "completed"]),
        inArray(projects.repoState, ["pending", "failed", "unconfigured"]),
        sql`(${projects.repoNextAt} IS NULL OR ${projects.repoNextAt} <= ${at})`,
      ),
    )
    .returning();
  if (!claimed) return null;

  const proposal = await db
    .select({ project: councilProposals.project })
    .from(councilProposals)
    .where(eq(councilProposals.id, claimed.proposalId))
    .get();
  let name = wantedRepoName(claimed, proposal?.project as { repo_name?: string } | null);
  try {
    const forge = await projectForge(env, db);
    const taken = await db
      .select({ id: projects.id })
      .from(projects)
      .where(and(sql`lower(${projects.repoFullName}) = lower(${`${forge.org}/${name}`})`, ne(projects.id, projectId)))
      .get();
    // Two projects never share a repository: the second gets its id's hex appended.
    if (taken) name = `${name.slice(0, 90)}-${projectId.slice(5, 13)}`;
    const repo = await forge.ensureRepository({ name, description: claimed.summary.replace(/\s+/g, " ").slice(0, 350) });
    await db.batch([
      db
        .update(projects)
        .set({
          repoState: "ready",
          repoFullName: repo.full_name,
          repoUrl: repo.html_url,
          repoDefaultBranch: repo.default_branch,
          repoReason: null,
          repoNextAt: null,
          updatedAt: at,
        })
        .where(eq(projects.id, projectId)),
      appendEvent(
        db,
        {
          type: "project.repository_ready",
          subject: projectId,
          payload: {
            project_id: projectId,
            repo: repo.full_name,
            url: repo.html_url,
            created: repo.created,
            attempt: claimed.repoAttempts,
          },
          dedupeKey: `project:${projectId}:repository_ready`,
        },
        now,
      ),
    ]);
    return { state: "ready" };
  } catch (err) {
    const appError = err instanceof AppError ? err : null;
    if (!appError && !isUniqueFailure(err, "projects")) throw err;
    const state = appError?.code === "unavailable" ? "unconfigured" : "failed";
    // The detail of a forge error is already redacted (no token, key or URL); nothing else is kept.
    const reason = appError ? `${appError.code}: ${appError.detail}` : "repository name taken by another project";
    const next = new Date(now.getTime() + backoffMs(claimed.repoAttempts, RETRY_BASE_MS, RETRY_MAX_MS)).toISOString();
    const changed = reason !== claimed.repoReason || state !== claimed.repoState;
    await db.batch([
      db.update(projects).set({ repoState: state, repoReason: reason, repoNextAt: next, updatedAt: at }).where(eq(projects.id, projectId)),
      // One event per distinct failure, not one per hourly retry of the same one.
      ...(changed
        ? [
            appendEvent(
              db,
              {
                type: "project.repository_failed",
                subject: projectId,
                payload: { project_id: projectId, state, reason, attempt: claimed.repoAttempts, next_attempt_at: next },
              },
              now,
            ),
          ]
        : []),
    ]);
    return { state };
  }
}

/** Active projects whose repository is due another attempt (the `projects` tick). */
export async function dueRepositories(db: Db, now: Date, limit = 10): Promise<string[]> {
  const rows = await db
    .select({ id: projects.id })
    .from(projects)
    .where(
      and(
        inArray(projects.status, ["active", "completed"]),
        inArray(projects.repoState, ["pending", "failed", "unconfigured"]),
        sql`(${projects.repoNextAt} IS NULL OR ${projects.repoNextAt} <= ${now.toISOString()})`,
      ),
    )
    .limit(limit)
    .all();
  return rows.map((r) => r.id);
}
