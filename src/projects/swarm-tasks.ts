import { and, asc, desc, eq, lt, or, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import * as z from "zod";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { projectContributions, SWARM_TASK_STATUSES, swarmTasks, type SwarmTaskStatus } from "../db/schema";
import { AppError, notFound } from "../lib/errors";
import { takePage } from "../lib/paging";
import { prose } from "../lib/validation";
import { assertNotSuspended, getNode } from "../nodes/registry";
import { creditStatements, penaltyStatements } from "../nodes/reputation";
import type { ReputationConfig } from "../nodes/reputation-config";
import type { ProjectsConfig } from "./config";

export type SwarmTaskRow = typeof swarmTasks.$inferSelect;

export const taskIdPattern = /^task_[0-9a-f]{16}$/;
export const taskId = z.string().regex(taskIdPattern, "a task id (task_ + 16 hex)");
export const taskCursor = z.tuple([z.string().max(64), z.string().max(64)]);
const HOUR = 3_600_000;

export const completionInput = z.strictObject({
  summary: prose(10_000),
  commit_sha: z
    .string()
    .regex(/^[0-9a-f]{40}$/, "a 40-hex commit sha")
    .optional(),
});
export type CompletionInput = z.infer<typeof completionInput>;

/**
 * What a task is now, whatever the tick has written yet: past `expires_at` an unfinished task is
 * expired; a claim past `claim_expires_at` has lapsed and the task is open again.
 */
export function effectiveStatus(t: Pick<SwarmTaskRow, "status" | "expiresAt" | "claimExpiresAt">, at: string): SwarmTaskStatus {
  if ((t.status === "open" || t.status === "claimed") && t.expiresAt <= at) return "expired";
  if (t.status === "claimed" && t.claimExpiresAt !== null && t.claimExpiresAt <= at) return "open";
  return t.status;
}

/** The SQL twin of `effectiveStatus`, for filtering lists. */
function statusCondition(status: SwarmTaskStatus, at: string): SQL {
  switch (status) {
    case "open":
      return sql`(${swarmTasks.expiresAt} > ${at} AND (${swarmTasks.status} = 'open' OR (${swarmTasks.status} = 'claimed' AND ${swarmTasks.claimExpiresAt} <= ${at})))`;
    case "claimed":
      return sql`(${swarmTasks.expiresAt} > ${at} AND ${swarmTasks.status} = 'claimed' AND ${swarmTasks.claimExpiresAt} > ${at})`;
    case "expired":
      return sql`(${swarmTasks.status} = 'expired' OR (${swarmTasks.status} IN ('open', 'claimed') AND ${swarmTasks.expiresAt} <= ${at}))`;
    default:
      return sql`${swarmTasks.status} = ${status}`;
  }
}

export function taskView(t: SwarmTaskRow, now: Date) {
  const at = now.toISOString();
  const status = effectiveStatus(t, at);
  const held = status === "claimed" || status === "completed";
  return {
    task_id: t.id,
    kind: t.projectId ? ("project" as const) : ("council" as const),
    title: t.title,
    body: t.body,
    status,
    project_id: t.projectId,
    source_session_id: t.sourceSessionId,
    seq: t.seq,
    signals: t.signals,
    weight: t.weight,
    claimed_by: held ? t.claimedBy : null,
    claimed_at: held ? t.claimedAt : null,
    claim_expires_at: status === "claimed" ? t.claimExpiresAt : null,
    completed_by: t.completedBy,
    completed_at: t.completedAt,
    summary: t.summary,
    commit_sha: t.commitSha,
    verified_by: t.verifiedBy,
    verified_at: t.verifiedAt,
    // Dispatch (council tasks): who holds the live offer (only it may claim until offer_expires_at).
    dispatch:
      t.dispatch === null
        ? null
        : {
            state: t.dispatch,
            offered_to: status === "open" && liveOffer(t, at) ? t.offeredTo : null,
            offer_expires_at: status === "open" && liveOffer(t, at) ? t.offerExpiresAt : null,
            offers: t.offerCount,
            offered_nodes: t.offeredNodes,
          },
    created_at: t.createdAt,
    expires_at: t.expiresAt,
  };
}

/** An offer in its claim window: only the offered node may claim the task meanwhile. */
export function liveOffer(t: Pick<SwarmTaskRow, "offeredTo" | "offerExpiresAt">, at: string): boolean {
  return t.offeredTo !== null && t.offerExpiresAt !== null && t.offerExpiresAt > at;
}

/**
 * The reputation a claim needs: a council task takes `claim_min_reputation` (20); a project task
 * also takes newcomers from `project_claim_min_reputation` (10), since its completion is checkable.
 */
export function claimFloor(task: Pick<SwarmTaskRow, "projectId">, config: ProjectsConfig): number {
  return task.projectId ? Math.min(config.project_claim_min_reputation, config.claim_min_reputation) : config.claim_min_reputation;
}

/** How many unfinished claims a node may hold: `max_claims`, or `newcomer_max_claims` below the claim floor. */
export function holdingLimit(reputation: number, config: ProjectsConfig): number {
  return reputation >= config.claim_min_reputation ? config.max_claims : config.newcomer_max_claims;
}

/** The SQL count of a node's live claims (the holding limit's input). */
export function heldClaimsSql(nodeId: SQL | string, at: string): SQL {
  const node = typeof nodeId === "string" ? sql`${nodeId}` : nodeId;
  return sql`(SELECT COUNT(*) FROM swarm_tasks h WHERE h.claimed_by = ${node} AND h.status = 'claimed' AND h.claim_expires_at > ${at} AND h.expires_at > ${at})`;
}
export type TaskView = ReturnType<typeof taskView>;

export const taskListQuery = z.object({
  status: z.enum(SWARM_TASK_STATUSES).optional(),
  project_id: z
    .string()
    .regex(/^proj_[0-9a-f]{16}$/, "a project id")
    .optional(),
});

/** One page of swarm tasks, newest first, keyset-paged on (created_at, id). */
export async function listTasks(
  db: Db,
  q: { status?: SwarmTaskStatus; project_id?: string; limit: number; cursor?: z.infer<typeof taskCursor> },
  now: Date,
): Promise<{ tasks: TaskView[]; next_cursor: string | null }> {
  const at = now.toISOString();
  const after = q.cursor
    ? or(lt(swarmTasks.createdAt, q.cursor[0]), and(eq(swarmTasks.createdAt, q.cursor[0]), lt(swarmTasks.id, q.cursor[1])))
    : undefined;
  const rows = await db
    .select()
    .from(swarmTasks)
    .where(
      and(q.status ? statusCondition(q.status, at) : undefined, q.project_id ? eq(swarmTasks.projectId, q.project_id) : undefined, after),
    )
    .orderBy(desc(swarmTasks.createdAt), desc(swarmTasks.id))
    .limit(q.limit + 1)
    .all();
  const page = takePage(rows, q.limit, (r) => [r.createdAt, r.id]);
  return { tasks: page.items.map((t) => taskView(t, now)), next_cursor: page.next_cursor };
}

/** A project's tasks in decomposition order (at most 10). */
export async function projectTasks(db: Db, projectId: string, now: Date): Promise<TaskView[]> {
  const rows = await db
    .select()
    .from(swarmTasks)
    .where(eq(swarmTasks.projectId, projectId))
    .orderBy(asc(swarmTasks.seq), asc(swarmTasks.id))
    .all();
  return rows.map((t) => taskView(t, now));
}

export async function getTask(db: Db, id: string): Promise<SwarmTaskRow> {
  const row = await db.select().from(swarmTasks).where(eq(swarmTasks.id, id)).get();
  if (!row) throw notFound(`swarm task ${id}`);
  return row;
}

/** Why a claim or a completion found nothing to change: the task as it is now, as an error. */
async function refusal(
  db: Db,
  id: string,
  nodeId: string,
  at: string,
  what: "claim" | "complete",
  limit = 0,
): Promise<AppError | SwarmTaskRow> {
  const t = await getTask(db, id);
  const status = effectiveStatus(t, at);
  if (what === "claim" && status === "claimed" && t.claimedBy === nodeId) return t; // already this node's: a repeat claim
  if (what === "complete" && status === "claimed" && t.claimedBy !== nodeId) {
    return new AppError("forbidden", "Only the task's claimant completes it", { extra: { status } });
  }
  if (what === "claim" && status === "open" && liveOffer(t, at) && t.offeredTo !== nodeId) {
    return new AppError("conflict", `The task is offered to another node until ${t.offerExpiresAt}`, {
      extra: { status, reason: "offered_to_another_node", offer_expires_at: t.offerExpiresAt },
    });
  }
  if (what === "claim" && status === "open") {
    const held = (await db.get<{ n: number }>(sql`SELECT ${heldClaimsSql(nodeId, at)} AS n`)).n;
    if (held >= limit) {
      return new AppError("conflict", `This node already holds ${held} unfinished claim(s), its limit`, {
        extra: { status, reason: "holding_limit", held, limit },
      });
    }
  }
  if (what === "claim" && status === "open" && t.projectId) {
    return new AppError("conflict", "The task's project is not active", { extra: { status, reason: "project_not_active" } });
  }
  const reason = status === "claimed" ? "already_claimed" : status === "open" ? "not_claimed" : status;
  return new AppError("conflict", `The task is ${status}${status === "claimed" ? " by another node" : ""}`, { extra: { status, reason } });
}

/**
 * Claims a task: one claimant at a time. The claim is one conditional statement (open, or a lapsed
 * claim; not expired; a project task only while its project is active; not offered to another node
 * within its claim window; the node under its holding limit and not suspended), and its event is
 * written under the same condition in the same batch, so of racing claims exactly one lands and is
 * recorded. Taking over a lapsed claim charges its previous holder `claim_abandoned`, in the batch.
 */
export async function claimTask(
  db: Db,
  id: string,
  nodeId: string,
  now: Date,
  config: ProjectsConfig,
  reputation: ReputationConfig,
): Promise<SwarmTaskRow> {
  const node = await getNode(db, nodeId);
  assertNotSuspended(node);
  const task = await getTask(db, id);
  const floor = claimFloor(task, config);
  if (node.reputation < floor) {
    throw new AppError("not_eligible", `Claiming this swarm task needs reputation ≥ ${floor} (this node has ${node.reputation})`, {
      extra: { reason: "reputation_insufficient" },
    });
  }
  const limit = holdingLimit(node.reputation, config);
  const at = now.toISOString();
  const claimExpiresAt = new Date(now.getTime() + config.claim_ttl_hours * HOUR).toISOString();
  const cond = sql`id = ${id} AND expires_at > ${at} AND (status = 'open' OR (status = 'claimed' AND claim_expires_at <= ${at}))
    AND (project_id IS NULL OR EXISTS (SELECT 1 FROM projects p WHERE p.id = swarm_tasks.project_id AND p.status = 'active'))
    AND (offered_to IS NULL OR offered_to = ${nodeId} OR offer_expires_at <= ${at})
    AND ${heldClaimsSql(nodeId, at)} < ${limit}
    AND EXISTS (SELECT 1 FROM nodes x WHERE x.id = ${nodeId} AND x.suspended_at IS NULL)`;
  const results = await db.batch([
    batchable(
      db,
      sql`
      INSERT INTO events (type, subject, payload, created_at)
      SELECT 'swarm_task.claimed', id, json_object('task_id', id, 'node_id', ${nodeId}, 'project_id', project_id, 'claim_expires_at', ${claimExpiresAt},
        'previous_claimant', CASE WHEN status = 'claimed' THEN claimed_by END, 'offered', json(CASE WHEN offered_to = ${nodeId} AND offer_expires_at > ${at} THEN 'true' ELSE 'false' END)), ${at}
      FROM swarm_tasks WHERE ${cond}`,
    ),
    ...penaltyStatements(
      db,
      reputation,
      "claim_abandoned",
      sql`SELECT claimed_by AS node_id, id || '@' || claimed_at AS reference FROM swarm_tasks WHERE ${cond} AND status = 'claimed'`,
      now,
      { detail: { task_id: id, taken_over_by: nodeId } },
    ),
    batchable<SwarmTaskRow>(
      db,
      sql`UPDATE swarm_tasks SET status = 'claimed', claimed_by = ${nodeId}, claimed_at = ${at}, claim_expires_at = ${claimExpiresAt},
            offered_to = NULL, offer_expires_at = NULL, updated_at = ${at}
          WHERE ${cond} RETURNING id`,
      "all",
    ),
  ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  if ((results[results.length - 1] as unknown[]).length > 0) return getTask(db, id);
  const why = await refusal(db, id, nodeId, at, "claim", limit);
  if (why instanceof AppError) throw why;
  return why;
}

/**
 * Claims that lapsed unfinished (the `projects` tick): the task is open again and its holder is
 * charged `claim_abandoned` (once per claim: the reference is the task and the claim's time, the
 * same a takeover in `claimTask` uses), each in one batch with its event.
 */
export async function lapseClaims(db: Db, now: Date, reputation: ReputationConfig, limit = 100): Promise<number> {
  const at = now.toISOString();
  const lapsed = await db
    .select({ id: swarmTasks.id, claimedAt: swarmTasks.claimedAt })
    .from(swarmTasks)
    .where(and(eq(swarmTasks.status, "claimed"), sql`${swarmTasks.claimExpiresAt} <= ${at}`, sql`${swarmTasks.expiresAt} > ${at}`))
    .limit(limit)
    .all();
  let count = 0;
  for (const t of lapsed) {
    const cond = sql`id = ${t.id} AND status = 'claimed' AND claimed_at = ${t.claimedAt} AND claim_expires_at <= ${at} AND expires_at > ${at}`;
    const results = await db.batch([
      batchable(
        db,
        sql`INSERT INTO events (type, subject, payload, created_at)
            SELECT 'swarm_task.claim_lapsed', id, json_object('task_id', id, 'node_id', claimed_by, 'project_id', project_id,
              'claimed_at', claimed_at, 'claim_expires_at', claim_expires_at), ${at}
            FROM swarm_tasks WHERE ${cond}`,
      ),
      ...penaltyStatements(
        db,
        reputation,
        "claim_abandoned",
        sql`SELECT claimed_by AS node_id, id || '@' || claimed_at AS reference FROM swarm_tasks WHERE ${cond}`,
        now,
        { detail: { task_id: t.id } },
      ),
      batchable(
        db,
        sql`UPDATE swarm_tasks SET status = 'open', claimed_by = NULL, claimed_at = NULL, claim_expires_at = NULL, updated_at = ${at}
            WHERE ${cond} RETURNING id`,
        "all",
      ),
    ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    if ((results[results.length - 1] as unknown[]).length > 0) count++;
  }
  return count;
}

/** The claimant gives a task back; it is open again at once. */
export async function releaseTask(db: Db, id: string, nodeId: string, now: Date): Promise<SwarmTaskRow> {
  const at = now.toISOString();
  const cond = sql`id = ${id} AND status = 'claimed' AND claimed_by = ${nodeId} AND claim_expires_at > ${at} AND expires_at > ${at}`;
  const results = await db.batch([
    batchable(
      db,
      sql`INSERT INTO events (type, subject, payload, created_at)
          SELECT 'swarm_task.released', id, json_object('task_id', id, 'node_id', ${nodeId}, 'project_id', project_id), ${at} FROM swarm_tasks WHERE ${cond}`,
    ),
    batchable(
      db,
      sql`UPDATE swarm_tasks SET status = 'open', claimed_by = NULL, claimed_at = NULL, claim_expires_at = NULL, updated_at = ${at} WHERE ${cond} RETURNING id`,
      "all",
    ),
  ]);
  if ((results[1] as unknown[]).length > 0) return getTask(db, id);
  const why = await refusal(db, id, nodeId, at, "complete");
  throw why instanceof AppError ? why : new AppError("conflict", "The task is not claimed by this node");
}

/**
 * The claimant completes a task with a summary and, optionally, the commit that did it (for a
 * project task, one of this node's recorded contributions to it). The completion and its event
 * are one batch under one condition. A project task completed with its contribution commit is
 * verified work: the `task_completed` credit (capped per day) lands in the same batch. A bare
 * completion earns nothing until a manager verifies it (`verifyTask`).
 */
export async function completeTask(
  db: Db,
  id: string,
  nodeId: string,
  input: CompletionInput,
  now: Date,
  reputation: ReputationConfig,
): Promise<SwarmTaskRow> {
  const at = now.toISOString();
  const node = await getNode(db, nodeId);
  assertNotSuspended(node);
  const task = await getTask(db, id);
  if (input.commit_sha && task.projectId) {
    const known = await db
      .select({ id: projectContributions.id })
      .from(projectContributions)
      .where(
        and(
          eq(projectContributions.taskId, id),
          eq(projectContributions.nodeId, nodeId),
          eq(projectContributions.commitSha, input.commit_sha),
        ),
      )
      .get();
    if (!known) {
      throw new AppError("conflict", "commit_sha is not one of this node's contributions to the task", {
        extra: { reason: "unknown_commit" },
      });
    }
  }
  const verified = Boolean(input.commit_sha && task.projectId);
  const cond = sql`id = ${id} AND status = 'claimed' AND claimed_by = ${nodeId} AND claim_expires_at > ${at} AND expires_at > ${at}`;
  const held = sql`EXISTS (SELECT 1 FROM swarm_tasks WHERE ${cond})`;
  const statements: BatchItem<"sqlite">[] = [
    batchable(
      db,
      sql`INSERT INTO events (type, subject, payload, created_at)
          SELECT 'swarm_task.completed', id, json_object('task_id', id, 'node_id', ${nodeId}, 'project_id', project_id, 'summary', ${input.summary},
            'commit_sha', ${input.commit_sha ?? null}, 'verified', json(${verified ? "true" : "false"})), ${at}
          FROM swarm_tasks WHERE ${cond}`,
    ),
    ...(verified
      ? creditStatements(db, reputation, "task_completed", [{ node_id: nodeId, reference: id }], now, {
          when: held,
          detail: { task_id: id, project_id: task.projectId, commit_sha: input.commit_sha, verified_by: "contribution" },
        })
      : []),
    batchable(
      db,
      sql`UPDATE swarm_tasks SET status = 'completed', completed_by = ${nodeId}, completed_at = ${at}, summary = ${input.summary},
            commit_sha = ${input.commit_sha ?? null}, claim_expires_at = NULL, updated_at = ${at},
            verified_by = ${verified ? "contribution" : null}, verified_at = ${verified ? at : null}
          WHERE ${cond} RETURNING id`,
      "all",
    ),
  ];
  const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  if ((results[results.length - 1] as unknown[]).length > 0) return getTask(db, id);
  const why = await refusal(db, id, nodeId, at, "complete");
  throw why instanceof AppError ? why : new AppError("conflict", "The task is not claimed by this node");
}

/**
 * A manager verifies a completed task (`POST /v1/swarm/tasks/:id/verify`): the way a council task,
 * which has no commit to check, becomes verified work. Once per task; the `task_completed` credit
 * to its completer, the mark and the event are one batch under one condition.
 */
export async function verifyTask(db: Db, id: string, by: string, now: Date, reputation: ReputationConfig): Promise<SwarmTaskRow> {
  const at = now.toISOString();
  const task = await getTask(db, id);
  const cond = sql`id = ${id} AND status = 'completed' AND verified_at IS NULL`;
  const results = await db.batch([
    batchable(
      db,
      sql`INSERT INTO events (type, subject, payload, created_at)
          SELECT 'swarm_task.verified', id, json_object('task_id', id, 'node_id', completed_by, 'project_id', project_id, 'by', ${by}), ${at}
          FROM swarm_tasks WHERE ${cond}`,
    ),
    ...creditStatements(
      db,
      reputation,
      "task_completed",
      sql`SELECT completed_by AS node_id, id AS reference FROM swarm_tasks WHERE ${cond}`,
      now,
      {
        detail: { task_id: id, project_id: task.projectId, verified_by: by },
      },
    ),
    batchable(
      db,
      sql`UPDATE swarm_tasks SET verified_by = ${by}, verified_at = ${at}, updated_at = ${at} WHERE ${cond} RETURNING id`,
      "all",
    ),
  ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  if ((results[results.length - 1] as unknown[]).length > 0) return getTask(db, id);
  const t = await getTask(db, id);
  if (t.verifiedAt)
    throw new AppError("conflict", "The task is already verified", { extra: { reason: "already_verified", verified_by: t.verifiedBy } });
  throw new AppError("conflict", `Only a completed task is verified (this one is ${effectiveStatus(t, at)})`, {
    extra: { reason: "not_completed", status: effectiveStatus(t, at) },
  });
}

/** Marks unfinished tasks past `expires_at` expired, each with its event (the `projects` tick). */
export async function expireTasks(db: Db, now: Date): Promise<number> {
  const at = now.toISOString();
  const cond = sql`status IN ('open', 'claimed') AND expires_at <= ${at}`;
  const [, expired] = await db.batch([
    batchable(
      db,
      sql`INSERT INTO events (type, subject, payload, created_at)
          SELECT 'swarm_task.expired', id, json_object('task_id', id, 'project_id', project_id, 'expires_at', expires_at, 'claimed_by', claimed_by), ${at}
          FROM swarm_tasks WHERE ${cond}`,
    ),
    batchable(db, sql`UPDATE swarm_tasks SET status = 'expired', updated_at = ${at} WHERE ${cond} RETURNING id`, "all"),
  ]);
  return (expired as unknown[]).length;
}
