import { and, desc, eq, inArray, or } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { projects, swarmTasks } from "../db/schema";
import type { NodeRow } from "../nodes/registry";
import type { ProjectsConfig } from "../projects/config";
import { completionInput, listTasks, taskId, taskView, type TaskView } from "../projects/swarm-tasks";

/**
 * A swarm task as EvoMap clients read it: the `/v1` view, with `signals` as the comma-separated
 * string their task schema takes (an array there becomes ""), the list kept as `signal_list`.
 */
export function a2aTask(view: TaskView) {
  return { ...view, signals: (view.signals ?? []).join(","), signal_list: view.signals ?? [] };
}

/**
 * Open tasks a node may claim now (`available_work` on the heartbeat, `/a2a/fetch {tasks_only}`): the
 * `/v1` list of open tasks, newest first, less those `claimTask` would refuse on sight: below the
 * claim floor only project tasks (the newcomer's way in, from `project_claim_min_reputation`),
 * nothing below that; a project task whose project is not active; a task offered to another node
 * within its claim window. Without a node (an anonymous fetch), the open tasks of active projects
 * and the council's.
 */
export async function claimableTasks(db: Db, node: NodeRow | null, now: Date, config: ProjectsConfig, limit = 20) {
  if (node && node.reputation < Math.min(config.claim_min_reputation, config.project_claim_min_reputation)) return [];
  const newcomer = node !== null && node.reputation < config.claim_min_reputation;
  const { tasks } = await listTasks(db, { status: "open", limit }, now);
  const projectIds = [...new Set(tasks.flatMap((t) => (t.project_id ? [t.project_id] : [])))];
  const active = new Set(
    projectIds.length === 0
      ? []
      : (
          await db
            .select({ id: projects.id })
            .from(projects)
            .where(and(inArray(projects.id, projectIds), eq(projects.status, "active")))
            .all()
        ).map((p) => p.id),
  );
  return tasks
    .filter((t) => (t.project_id ? active.has(t.project_id) : !newcomer))
    .filter((t) => !t.dispatch?.offered_to || t.dispatch.offered_to === node?.id)
    .map(a2aTask);
}

/**
 * `GET /a2a/task/my`: the tasks a node holds or completed, most recently changed first. (A lapsed
 * claim is no longer the node's: the view says whose it is now.)
 */
export async function myTasks(db: Db, nodeId: string, now: Date, limit: number) {
  // TODO(projects): a `claimed_by`/`completed_by` filter on listTasks would own this query.
  const rows = await db
    .select()
    .from(swarmTasks)
    .where(or(eq(swarmTasks.claimedBy, nodeId), eq(swarmTasks.completedBy, nodeId)))
    .orderBy(desc(swarmTasks.updatedAt), desc(swarmTasks.id))
    .limit(limit)
    .all();
  return rows
    .map((r) => taskView(r, now))
    .filter((t) => t.claimed_by === nodeId || t.completed_by === nodeId)
    .map(a2aTask);
}

const senderFields = { sender_id: z.string().max(128).optional(), node_id: z.string().max(128).optional() };
// An EvoMap asset id (`sha256:<hex>` for the client's capsules); crewplane keeps it in the task's summary.
const assetId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:-]+$/, "an asset id (letters, digits, '.', '_', ':' or '-')");

/** `POST /a2a/task/claim`: `commitment_deadline` is accepted; the claim lasts `claim_ttl_hours` as on `/v1`. */
export const a2aClaimBody = z.object({ ...senderFields, task_id: taskId, commitment_deadline: z.string().max(64).optional() });

/** `POST /a2a/task/complete`: EvoMap completes with the asset that holds the result; a summary works too. */
export const a2aCompleteBody = z
  .object({
    ...senderFields,
    task_id: taskId,
    asset_id: assetId.optional(),
    summary: z.string().max(10_000).optional(),
    commit_sha: z.string().optional(),
  })
  .refine((b) => b.asset_id !== undefined || b.summary !== undefined, {
    message: "name the result: asset_id (or summary)",
    path: ["asset_id"],
  });

/** Worker pool: an assignment is the node's claim on one task, so its id is the task's. */
export const workClaimBody = z.object({ ...senderFields, task_id: taskId });
export const workCompleteBody = z.object({
  ...senderFields,
  assignment_id: taskId,
  result_asset_id: assetId,
});

/**
 * The `/v1` completion a facade completion stands for: the summary given and the result asset named,
 * validated by the `/v1` schema (a summary is prose; a commit is 40 hex).
 */
export function completionOf(b: { asset_id?: string | undefined; summary?: string | undefined; commit_sha?: string | undefined }) {
  const summary = [b.summary, b.asset_id !== undefined ? `Result asset ${b.asset_id}` : undefined].filter(Boolean).join("\n\n");
  return completionInput.parse({ summary, ...(b.commit_sha !== undefined ? { commit_sha: b.commit_sha } : {}) });
}
