import { and, desc, eq, lt, or, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import * as z from "zod";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { PROJECT_STATUSES, projects, type ProjectStatus } from "../db/schema";
import { AppError, notFound } from "../lib/errors";
import { takePage } from "../lib/paging";
import { isClosed, legalTargets, transitionVerdict } from "./lifecycle";

export type ProjectRow = typeof projects.$inferSelect;

export const projectIdPattern = /^proj_[0-9a-f]{16}$/;
export const projectId = z.string().regex(projectIdPattern, "a project id (proj_ + 16 hex)");
/** How projects are listed (newest first), and so what a page cursor holds: `[created_at, id]`. */
export const projectCursor = z.tuple([z.string().max(64), z.string().max(64)]);

export async function findProject(db: Db, id: string): Promise<ProjectRow | undefined> {
  return db.select().from(projects).where(eq(projects.id, id)).get();
}

export async function getProject(db: Db, id: string): Promise<ProjectRow> {
  const row = await findProject(db, id);
  if (!row) throw notFound(`project ${id}`);
  return row;
}

/** The public view of a project: its lifecycle, and why it waits when it does (no secret is stored here). */
export function projectView(p: ProjectRow) {
  return {
    project_id: p.id,
    name: p.name,
    summary: p.summary,
    status: p.status,
    proposer_id: p.proposerId,
    proposal_id: p.proposalId,
    session_id: p.sessionId,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    decomposition: p.decompState
      ? {
          state: p.decompState,
          attempts: p.decompAttempts,
          job_id: p.decompJobId,
          reason: p.decompReason,
          detail: p.decompDetail,
          next_attempt_at: p.decompNextAt,
          source: p.decompSource,
          decomposed_at: p.decomposedAt,
        }
      : null,
    repository: p.repoState
      ? {
          state: p.repoState,
          full_name: p.repoFullName,
          url: p.repoUrl,
          default_branch: p.repoDefaultBranch,
          reason: p.repoReason,
          attempts: p.repoAttempts,
          next_attempt_at: p.repoState === "ready" ? null : p.repoNextAt,
        }
      : null,
  };
}
export type ProjectView = ReturnType<typeof projectView>;

export const projectListQuery = z.object({ status: z.enum(PROJECT_STATUSES).optional() });

/** One page of projects, newest first, keyset-paged on (created_at, id). */
export async function listProjects(
  db: Db,
  q: { status?: ProjectStatus; limit: number; cursor?: z.infer<typeof projectCursor> },
): Promise<{ projects: ProjectView[]; next_cursor: string | null }> {
  const after = q.cursor
    ? or(lt(projects.createdAt, q.cursor[0]), and(eq(projects.createdAt, q.cursor[0]), lt(projects.id, q.cursor[1])))
    : undefined;
  const rows = await db
    .select()
    .from(projects)
    .where(and(q.status ? eq(projects.status, q.status) : undefined, after))
    .orderBy(desc(projects.createdAt), desc(projects.id))
    .limit(q.limit + 1)
    .all();
  const page = takePage(rows, q.limit, (r) => [r.createdAt, r.id]);
  return { projects: page.items.map(projectView), next_cursor: page.next_cursor };
}

/**
 * The statements that record a move and, into a closed status, revoke the project's unfinished
 * tasks: each conditioned on `cond` (the project still where the caller saw it), written before
 * the move itself so they exist exactly when it happens.
 */
export function moveStatements(
  db: Db,
  p: { id: string; from: ProjectStatus; to: ProjectStatus },
  detail: Record<string, string>,
  now: Date,
): { statements: BatchItem<"sqlite">[]; cond: SQL } {
  const at = now.toISOString();
  const cond = sql`id = ${p.id} AND status = ${p.from}`;
  const extra = Object.entries(detail).flatMap(([k, v]) => [sql`${k}`, sql`${v}`]);
  const statements: BatchItem<"sqlite">[] = [
    batchable(
      db,
      sql`
      INSERT INTO events (type, subject, payload, created_at)
      SELECT 'project.status_changed', id, json_object('project_id', id, 'from', status, 'to', ${p.to}, ${sql.join(extra, sql`, `)}), ${at}
      FROM projects WHERE ${cond}`,
    ),
  ];
  if (isClosed(p.to)) {
    const stillThere = sql`EXISTS (SELECT 1 FROM projects WHERE ${cond})`;
    statements.push(
      batchable(
        db,
        sql`
        INSERT INTO events (type, subject, payload, created_at)
        SELECT 'swarm_task.revoked', id, json_object('task_id', id, 'project_id', project_id, 'reason', ${`project_${p.to}`}), ${at}
        FROM swarm_tasks WHERE project_id = ${p.id} AND status IN ('open', 'claimed') AND ${stillThere}`,
      ),
      batchable(
        db,
        sql`UPDATE swarm_tasks SET status = 'revoked', updated_at = ${at} WHERE project_id = ${p.id} AND status IN ('open', 'claimed') AND ${stillThere}`,
      ),
    );
  }
  return { statements, cond };
}

/**
 * A manager's move (`POST /v1/projects/:id/transition`): legal lifecycle moves for a manager only
 * (`409 illegal_transition` naming the moves that are), made with a condition on the status read,
 * so a concurrent move (a council decision) is never overwritten.
 */
export async function transitionProject(db: Db, id: string, to: ProjectStatus, by: string, now: Date): Promise<ProjectRow> {
  const p = await getProject(db, id);
  const verdict = transitionVerdict(p.status, to, "manager");
  if (!verdict.ok) {
    throw new AppError("illegal_transition", verdict.detail, {
      extra: {
        from: p.status,
        to,
        reason: verdict.reason,
        allowed: legalTargets(p.status, "manager"),
        ...(verdict.made_by ? { made_by: verdict.made_by } : {}),
      },
    });
  }
  const { statements } = moveStatements(db, { id, from: p.status, to }, { by: "manager", operator: by }, now);
  const update = db
    .update(projects)
    .set({ status: to, updatedAt: now.toISOString() })
    .where(and(eq(projects.id, id), eq(projects.status, p.status)))
    .returning();
  const results = await db.batch([...statements, update] as unknown as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const [moved] = results[results.length - 1] as ProjectRow[];
  if (!moved) {
    const now2 = await getProject(db, id);
    throw new AppError("conflict", `The project moved to ${now2.status} meanwhile; nothing was changed`, {
      extra: { status: now2.status },
    });
  }
  return moved;
}
