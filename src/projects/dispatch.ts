import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { swarmTasks } from "../db/schema";
import type { Env } from "../env";
import { notifySelectedStatement, type InsertedNodeEvent } from "../nodes/events";
import { enqueuePushes } from "../nodes/webhook";
import type { ProjectsConfig } from "./config";
import { heldClaimsSql, type SwarmTaskRow } from "./swarm-tasks";

/**
 * Dispatch of council tasks (seed 004: an approved general proposal's task "enters the auto-dispatch
 * pipeline and is assigned to eligible agents"). A task is offered to one eligible node at a time:
 * a `swarm_task_offer` pending event (pushed to its verified webhook too) and a claim window of
 * `offer_window_minutes` in which only that node may claim it. When the window lapses, the next
 * eligible node gets the offer (the `projects` tick; until then anyone eligible may claim, the way a
 * lapsed claim is open before the tick writes it). After `max_offers` offers, or when no eligible
 * node is left, the task is `open` to every node that may claim. It stays listed as open throughout.
 */

const HOUR = 3_600_000;
const MINUTE = 60_000;

/** What an offer's choice knows about a node. */
export interface OfferCandidate {
  node_id: string;
  reputation: number;
  model_tier: number;
  last_heartbeat_at: string | null;
  suspended_at: string | null;
  /** Unfinished claims it holds now. */
  held: number;
}

export type OfferIneligibility = "suspended" | "reputation" | "model_tier" | "no_recent_heartbeat" | "holding_limit" | "already_offered";

/** Why a node cannot be offered a task now; null when it can. */
export function offerIneligibility(
  c: OfferCandidate,
  offered: readonly string[],
  nowMs: number,
  config: Pick<ProjectsConfig, "claim_min_reputation" | "offer_min_tier" | "offer_heartbeat_hours" | "max_claims">,
): OfferIneligibility | null {
  if (c.suspended_at !== null) return "suspended";
  if (offered.includes(c.node_id)) return "already_offered";
  if (c.reputation < config.claim_min_reputation) return "reputation";
  if (c.model_tier < config.offer_min_tier) return "model_tier";
  const beat = c.last_heartbeat_at === null ? NaN : Date.parse(c.last_heartbeat_at);
  if (!(beat <= nowMs && nowMs - beat <= config.offer_heartbeat_hours * HOUR)) return "no_recent_heartbeat";
  if (c.held >= config.max_claims) return "holding_limit";
  return null;
}

export type OfferDecision =
  | { kind: "offer"; node_id: string; offer_number: number; expires_at: string }
  | { kind: "open"; reason: "max_offers" | "no_eligible_node" };

/**
 * The next step for a task whose offer is due: the highest-reputation eligible node (fewer claims
 * held breaks ties, then the node id), or open to all when the offers ran out or nobody is eligible.
 */
export function nextOffer(
  task: { offer_count: number; offered_nodes: readonly string[] },
  candidates: readonly OfferCandidate[],
  nowMs: number,
  config: Pick<
    ProjectsConfig,
    "claim_min_reputation" | "offer_min_tier" | "offer_heartbeat_hours" | "max_claims" | "max_offers" | "offer_window_minutes"
  >,
): OfferDecision {
  if (task.offer_count >= config.max_offers) return { kind: "open", reason: "max_offers" };
  const best = candidates
    .filter((c) => offerIneligibility(c, task.offered_nodes, nowMs, config) === null)
    .sort((a, b) => b.reputation - a.reputation || a.held - b.held || (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0))[0];
  if (!best) return { kind: "open", reason: "no_eligible_node" };
  return {
    kind: "offer",
    node_id: best.node_id,
    offer_number: task.offer_count + 1,
    expires_at: new Date(nowMs + config.offer_window_minutes * MINUTE).toISOString(),
  };
}

/** A task whose next offer is due: being offered, open (no live claim), not expired, no live offer. */
function dueCondition(at: string) {
  return sql`dispatch = 'offering' AND expires_at > ${at}
    AND (status = 'open' OR (status = 'claimed' AND claim_expires_at <= ${at}))
    AND (offered_to IS NULL OR offer_expires_at <= ${at})`;
}

async function candidates(db: Db, task: SwarmTaskRow, now: Date, config: ProjectsConfig): Promise<OfferCandidate[]> {
  const at = now.toISOString();
  const since = new Date(now.getTime() - config.offer_heartbeat_hours * HOUR).toISOString();
  const offered = task.offeredNodes.length > 0 ? task.offeredNodes : [""];
  return db.all<OfferCandidate>(sql`
    SELECT n.id AS node_id, n.reputation, n.model_tier, n.last_heartbeat_at, n.suspended_at, ${heldClaimsSql(sql`n.id`, at)} AS held
    FROM nodes n
    WHERE n.suspended_at IS NULL AND n.reputation >= ${config.claim_min_reputation} AND n.model_tier >= ${config.offer_min_tier}
      AND n.last_heartbeat_at >= ${since} AND n.last_heartbeat_at <= ${at}
      AND n.id NOT IN (${sql.join(
        offered.map((id) => sql`${id}`),
        sql`, `,
      )})
      AND ${heldClaimsSql(sql`n.id`, at)} < ${config.max_claims}
    ORDER BY n.reputation DESC, n.id
    LIMIT 50`);
}

/**
 * Moves one task's dispatch on if its offer is due: decides (`nextOffer`) and writes the decision
 * under the state it was made on (the offer count and the due condition), with its event and, for
 * an offer, the node's pending event, in one batch; then pushes to a verified webhook. Racing
 * dispatchers land one offer. Returns what happened, or null when nothing was due.
 */
export async function advanceDispatch(env: Env, db: Db, taskId: string, now: Date, config: ProjectsConfig): Promise<OfferDecision | null> {
  const at = now.toISOString();
  const task = await db
    .select()
    .from(swarmTasks)
    .where(and(eq(swarmTasks.id, taskId), dueCondition(at)))
    .get();
  if (!task) return null;
  const decision = nextOffer(
    { offer_count: task.offerCount, offered_nodes: task.offeredNodes },
    await candidates(db, task, now, config),
    now.getTime(),
    config,
  );
  const cond = sql`id = ${taskId} AND offer_count = ${task.offerCount} AND ${dueCondition(at)}`;
  if (decision.kind === "open") {
    const [, opened] = await db.batch([
      batchable(
        db,
        sql`INSERT INTO events (type, subject, payload, created_at)
            SELECT 'swarm_task.open_to_all', id, json_object('task_id', id, 'reason', ${decision.reason}, 'offers', offer_count), ${at}
            FROM swarm_tasks WHERE ${cond}`,
      ),
      batchable(
        db,
        sql`UPDATE swarm_tasks SET dispatch = 'open', offered_to = NULL, offer_expires_at = NULL, updated_at = ${at} WHERE ${cond} RETURNING id`,
        "all",
      ),
    ]);
    return (opened as unknown[]).length > 0 ? decision : null;
  }
  const payload = {
    task_id: task.id,
    title: task.title,
    body: task.body,
    source_session_id: task.sourceSessionId,
    offer_number: decision.offer_number,
    offer_expires_at: decision.expires_at,
    expires_at: task.expiresAt,
    claim: `/v1/swarm/tasks/${task.id}/claim`,
  };
  // The event and the notice read the state before the update, under its condition: they exist
  // exactly when the update happens (D1 runs the batch as one transaction).
  const statements: BatchItem<"sqlite">[] = [
    batchable(
      db,
      sql`INSERT INTO events (type, subject, payload, created_at)
          SELECT 'swarm_task.offered', id, json_object('task_id', id, 'node_id', ${decision.node_id}, 'offer_number', ${decision.offer_number},
            'offer_expires_at', ${decision.expires_at}), ${at}
          FROM swarm_tasks WHERE ${cond}`,
    ),
    notifySelectedStatement(
      db,
      sql`SELECT ${decision.node_id} FROM swarm_tasks WHERE ${cond}`,
      { type: "swarm_task_offer", payload, dedupe: `swarm_task_offer:${task.id}:${decision.offer_number}` },
      now,
    ),
    batchable(
      db,
      sql`UPDATE swarm_tasks SET offered_to = ${decision.node_id}, offer_expires_at = ${decision.expires_at}, offer_count = offer_count + 1,
            offered_nodes = json_insert(offered_nodes, '$[#]', ${decision.node_id}), updated_at = ${at}
          WHERE ${cond} RETURNING id`,
      "all",
    ),
  ];
  const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  if ((results[2] as unknown[]).length === 0) return null;
  await enqueuePushes(env, results[1] as InsertedNodeEvent[]);
  return decision;
}

/** The tasks whose next offer is due (the `projects` tick moves each on). */
export async function dueDispatches(db: Db, now: Date, limit = 100): Promise<string[]> {
  const rows = await db
    .select({ id: swarmTasks.id })
    .from(swarmTasks)
    .where(dueCondition(now.toISOString()))
    .orderBy(swarmTasks.createdAt)
    .limit(limit)
    .all();
  return rows.map((r) => r.id);
}
