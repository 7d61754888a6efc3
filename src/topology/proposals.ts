import { and, desc, eq, gt, inArray, or, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { approvals, employees, routingOverrides, topologyProposals, type ProposalRow } from "../db/schema";
import type { Env } from "../env";
import type { ApprovalAction } from "../approvals/action-hash";
import { actionChangedEvent, checkConsumable, consumption, enqueueDeliveries, pollApproval, prepareApproval } from "../approvals/broker";
import { appendEventWhere, insertWhere } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import type { TopologyConfig } from "./config";
import { foldEvidence, loadEvidenceCells, loadSampleTaskIds } from "./evidence-sql";
import type { Cell } from "./evidence";
import { proposalEvidence, proposeReroute, type ProposalDecision, type SkipReason } from "./proposal";

export const REROUTE_ACTION_KIND = "topology_reroute";

/** The action an approval is bound to, rebuilt from the proposal row whenever it is checked. */
export function rerouteAction(p: Pick<ProposalRow, "id" | "taskClass" | "fromAgent" | "toAgent">): ApprovalAction {
  return {
    kind: REROUTE_ACTION_KIND,
    subject: `${p.taskClass}:${p.fromAgent}`,
    params: { proposal_id: p.id, task_class: p.taskClass, from_agent: p.fromAgent, to_agent: p.toAgent },
  };
}

const DAY_MS = 86_400_000;

/**
 * Holds an edge back (seed 000 step 6): a pending proposal, an override in force, or any proposal
 * (denied and expired included) inside the cooldown. The same rule as SQL guards the insert itself.
 */
function edgeHeld(taskClass: string, fromAgent: string, cooldownStart: string): SQL {
  return sql`(EXISTS (SELECT 1 FROM ${topologyProposals} WHERE ${and(
    eq(topologyProposals.taskClass, taskClass),
    eq(topologyProposals.fromAgent, fromAgent),
    or(eq(topologyProposals.status, "pending"), gt(topologyProposals.createdAt, cooldownStart)),
  )}) OR EXISTS (SELECT 1 FROM ${routingOverrides} WHERE ${and(
    eq(routingOverrides.taskClass, taskClass),
    eq(routingOverrides.fromAgent, fromAgent),
    inArray(routingOverrides.status, ["active", "confirmed"]),
  )}))`;
}

/** The rows `heldMap` needs, as two un-executed queries (the tick reads them in its batch, under `guard`). */
export function heldEdgeQueries(db: Db, cooldownStart: string, guard?: SQL) {
  return [
    db
      .select({
        taskClass: topologyProposals.taskClass,
        fromAgent: topologyProposals.fromAgent,
        status: topologyProposals.status,
        createdAt: topologyProposals.createdAt,
      })
      .from(topologyProposals)
      .where(and(or(eq(topologyProposals.status, "pending"), gt(topologyProposals.createdAt, cooldownStart)), guard)),
    db
      .select({ taskClass: routingOverrides.taskClass, fromAgent: routingOverrides.fromAgent })
      .from(routingOverrides)
      .where(and(inArray(routingOverrides.status, ["active", "confirmed"]), guard)),
  ] as const;
}

export type HeldRows = [Awaited<ReturnType<typeof heldEdgeQueries>[0]>, Awaited<ReturnType<typeof heldEdgeQueries>[1]>];

/** Which edges are held back, and why (an override first, then a pending proposal, then cooldown). */
export function heldMap([proposals, overrides]: HeldRows): Map<string, SkipReason> {
  const held = new Map<string, SkipReason>();
  for (const o of overrides) held.set(edgeKey(o.taskClass, o.fromAgent), "override_in_force");
  for (const p of proposals) {
    const key = edgeKey(p.taskClass, p.fromAgent);
    if (p.status === "pending") held.set(key, "pending_proposal");
    else if (!held.has(key)) held.set(key, "cooldown");
  }
  return held;
}

export async function heldEdges(db: Db, cooldownStart: string): Promise<Map<string, SkipReason>> {
  const [proposals, overrides] = heldEdgeQueries(db, cooldownStart);
  return heldMap(await Promise.all([proposals, overrides]));
}

const edgeKey = (taskClass: string, fromAgent: string) => JSON.stringify([taskClass, fromAgent]);

export type ProposeResult =
  | { proposal_id: string; approval_id: string; status: "pending" | "no_channel"; task_class: string; from_agent: string; to_agent: string }
  | {
      proposal_id: null;
      reason: "no_candidate" | "lost_race";
      skipped: { task_class: string; agent: string; reason: SkipReason }[];
      ms?: Record<string, number>;
    }
  | { proposal_id: null; reason: "proposed_this_period"; last_proposal_at: string };

/**
 * Seed 000 step 2: at most one proposal per tick. Ticks are `tick_secs` apart, so this is "no other
 * proposal in the last tick_secs" — a condition on the insert itself, so any number of ticks at once
 * (cron, admin, a retry) still add at most one.
 */
export function recentProposal(periodStart: string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${topologyProposals} WHERE ${gt(topologyProposals.createdAt, periodStart)})`;
}

/** The instants the proposal step compares against. */
export interface ProposalWindow {
  /** One proposal per tick period: none since this. */
  periodStart: string;
  /** The evidence window's start (lookback_days). */
  since: string;
  /** Proposals after this hold their edge (proposal_cooldown_days). */
  cooldownStart: string;
}

export function proposalWindow(cfg: TopologyConfig, now: Date): ProposalWindow {
  return {
    periodStart: new Date(now.getTime() - cfg.tick_secs * 1000).toISOString(),
    since: new Date(now.getTime() - cfg.lookback_days * DAY_MS).toISOString(),
    cooldownStart: new Date(now.getTime() - cfg.proposal_cooldown_days * DAY_MS).toISOString(),
  };
}

/** The newest proposal of this tick period (of all time with `periodStart` null), if any (zero or one row). */
export function recentProposalQuery(db: Db, periodStart: string | null, guard?: SQL) {
  return db
    .select({ createdAt: topologyProposals.createdAt })
    .from(topologyProposals)
    .where(and(periodStart === null ? undefined : gt(topologyProposals.createdAt, periodStart), guard))
    .orderBy(desc(topologyProposals.createdAt))
    .limit(1);
}

/** Who reports to whom: what the rule's "sibling under the same parent" reads. */
export function orgQuery(db: Db, guard?: SQL) {
  return db.select({ id: employees.id, reportsTo: employees.reportsTo }).from(employees).where(guard);
}

/** What the proposal rule reads: the evidence cells, the org and the held edges. */
export interface ProposalInputs {
  cells: Cell[];
  org: { id: string; reportsTo: string | null }[];
  held: Map<string, SkipReason>;
}

/**
 * Step 2 + 3: evidence (one aggregate query), the pure rule, then at most one proposal, recorded in
 * one batch with its approval request and events, all guarded by the hold rule and the one-per-tick
 * rule, so that concurrent ticks cannot add a second proposal. This reads everything itself (the
 * tick reads the same inputs in its one batch and calls `proposeFrom`).
 */
export async function proposeOnce(
  env: Env,
  db: Db,
  cfg: TopologyConfig,
  now: Date,
  driver?: { foldedFrom: string | null; foldedThrough: string | null },
): Promise<ProposeResult> {
  const w = proposalWindow(cfg, now);
  // The fold runs whether or not this period already has a proposal: it only keeps the counters current.
  const foldStarted = performance.now();
  const [[recent], { folded }] = await Promise.all([recentProposalQuery(db, w.periodStart), foldEvidence(db, now, w.since, driver)]);
  if (recent) return { proposal_id: null, reason: "proposed_this_period", last_proposal_at: recent.createdAt };
  const evidenceStarted = performance.now();
  let evidenceMs = 0;
  const [cells, org, held] = await Promise.all([
    loadEvidenceCells(db, w.since, folded).finally(() => (evidenceMs = Math.round(performance.now() - evidenceStarted))),
    orgQuery(db),
    heldEdges(db, w.cooldownStart),
  ]);
  const ms = { fold: Math.round(evidenceStarted - foldStarted), evidence: evidenceMs };
  return proposeFrom(env, db, cfg, now, w, { cells, org, held }, ms);
}

/** The rule over inputs already read, then (when it proposes) the guarded insert. */
export function proposeFrom(
  env: Env,
  db: Db,
  cfg: TopologyConfig,
  now: Date,
  w: ProposalWindow,
  inputs: ProposalInputs,
  ms?: Record<string, number>,
): Promise<ProposeResult> {
  return recordProposal(env, db, cfg, now, w, decideProposal(cfg, inputs), ms);
}

/** The pure rule (`proposeReroute`) over what the proposal step read. */
export function decideProposal(cfg: TopologyConfig, { cells, org, held }: ProposalInputs): ProposalDecision {
  const parentOf = new Map(org.map((e) => [e.id, e.reportsTo]));
  return proposeReroute(cells, parentOf, cfg, (c, a) => held.get(edgeKey(c, a)) ?? null);
}

/** The "nothing proposed" answer for a decision without a proposal. */
export function noCandidate(decision: ProposalDecision, ms?: Record<string, number>): ProposeResult {
  return { proposal_id: null, reason: "no_candidate", skipped: decision.skipped, ...(ms ? { ms } : {}) };
}

/**
 * Records the decision's proposal, if it has one: its approval request, events and row in one batch,
 * every statement guarded by the hold rule and the one-per-tick rule, so concurrent proposers add at
 * most one.
 */
export async function recordProposal(
  env: Env,
  db: Db,
  cfg: TopologyConfig,
  now: Date,
  w: ProposalWindow,
  decision: ProposalDecision,
  ms?: Record<string, number>,
): Promise<ProposeResult> {
  const { periodStart, since, cooldownStart } = w;
  const p = decision.proposal;
  if (!p) return noCandidate(decision, ms);

  const evidence = proposalEvidence(p, await loadSampleTaskIds(db, since, p.from_agent, p.task_class), cfg.lookback_days);
  const proposalId = newId("tprop");
  const row = { id: proposalId, taskClass: p.task_class, fromAgent: p.from_agent, toAgent: p.to_agent };
  const guard = sql`(NOT ${edgeHeld(p.task_class, p.from_agent, cooldownStart)} AND NOT ${recentProposal(periodStart)})`;
  const approval = await prepareApproval(
    env,
    db,
    {
      action: rerouteAction(row),
      evidence: { ...evidence, proposal_id: proposalId },
      ttlSecs: cfg.approval_ttl_secs,
      requestedBy: "topology",
    },
    now,
    guard,
  );
  const at = now.toISOString();
  const payload = {
    proposal_id: proposalId,
    approval_id: approval.approvalId,
    task_class: p.task_class,
    from_agent: p.from_agent,
    to_agent: p.to_agent,
  };
  await db.batch([
    ...approval.statements,
    appendEventWhere(db, { type: "topology.proposed", subject: proposalId, payload: { ...payload, evidence } }, now, guard),
    ...(approval.status === "no_channel"
      ? [
          appendEventWhere(
            db,
            { type: "topology.rejected", subject: proposalId, payload: { ...payload, reason: "no_channel" } },
            now,
            guard,
          ),
        ]
      : []),
    // Last: inserting the proposal makes the guard false for anything after it.
    insertWhere(
      db,
      topologyProposals,
      {
        ...row,
        evidence,
        approvalId: approval.approvalId,
        status: approval.status === "no_channel" ? "no_channel" : "pending",
        createdAt: at,
        resolvedAt: approval.status === "no_channel" ? at : null,
      },
      guard,
    ),
  ]);
  const landed = await db.select({ id: topologyProposals.id }).from(topologyProposals).where(eq(topologyProposals.id, proposalId)).get();
  if (!landed) return { proposal_id: null, reason: "lost_race", skipped: decision.skipped };
  await enqueueDeliveries(env, db, approval.deliveries, now);
  return { ...payload, status: approval.status };
}

export interface Resolution {
  proposal_id: string;
  outcome: "approved" | "denied" | "expired" | "no_channel" | "action_changed" | "pending";
}

/** Pending proposals with their approval's state (null: the approval row is missing), oldest first. */
export function pendingProposalsQuery(db: Db, guard?: SQL) {
  return db
    .select({
      proposal: topologyProposals,
      // Aliased: inside a db.batch drizzle maps D1's rows by column name, so a second `status` would
      // collapse into the proposal's and shift every later column (the approval read as never pending).
      approvalStatus: sql<string | null>`${approvals.status}`.as("approval_status"),
      approvalExpiresAt: sql<string | null>`${approvals.expiresAt}`.as("approval_expires_at"),
    })
    .from(topologyProposals)
    .leftJoin(approvals, eq(approvals.id, topologyProposals.approvalId))
    .where(and(eq(topologyProposals.status, "pending"), guard))
    .orderBy(topologyProposals.createdAt, topologyProposals.id);
}

export type PendingRow = Awaited<ReturnType<typeof pendingProposalsQuery>>[number];

/** Still waiting for a human: what `pollApproval` would answer without writing (pending, TTL not reached). */
export function awaitingDecision(row: Pick<PendingRow, "approvalStatus" | "approvalExpiresAt">, now: Date): boolean {
  return row.approvalStatus === "pending" && row.approvalExpiresAt !== null && row.approvalExpiresAt > now.toISOString();
}

/**
 * Step 3 → 4: polls each pending proposal's approval and acts on the human's answer. Given the rows
 * `pendingProposalsQuery` read (the tick's batch), a proposal whose approval is still pending and
 * inside its TTL is left alone without another read; any other goes through `pollApproval`.
 */
export async function resolvePendingProposals(db: Db, cfg: TopologyConfig, now: Date, read?: readonly PendingRow[]): Promise<Resolution[]> {
  const pending = read ?? (await pendingProposalsQuery(db));
  const out: Resolution[] = [];
  for (const row of pending) {
    const p = row.proposal;
    if (awaitingDecision(row, now)) {
      out.push({ proposal_id: p.id, outcome: "pending" });
      continue;
    }
    const approval = await pollApproval(db, p.approvalId, now);
    // An approval that cannot be read is no approval: fail-closed, as if it had expired.
    const status = approval?.status ?? "expired";
    if (status === "pending") out.push({ proposal_id: p.id, outcome: "pending" });
    else if (status === "approved")
      out.push({ proposal_id: p.id, outcome: await applyApproved(db, cfg, p, approval!.decided_by ?? null, now) });
    else {
      await closeProposal(db, p, status, now, approval ? {} : { detail: "approval_missing" });
      out.push({ proposal_id: p.id, outcome: status });
    }
  }
  return out;
}

const pendingGuard = (id: string) => sql`EXISTS (SELECT 1 FROM ${topologyProposals} WHERE id = ${id} AND status = 'pending')`;

/** Denied, expired (TTL = DENY) or no_channel: `topology.rejected` with the reason, nothing routed. */
async function closeProposal(
  db: Db,
  p: ProposalRow,
  status: "denied" | "expired" | "no_channel" | "action_changed",
  now: Date,
  extra: Record<string, unknown> = {},
  before: BatchItem<"sqlite">[] = [],
) {
  await db.batch([
    ...(before as [BatchItem<"sqlite">]),
    appendEventWhere(
      db,
      {
        type: "topology.rejected",
        subject: p.id,
        payload: {
          proposal_id: p.id,
          approval_id: p.approvalId,
          task_class: p.taskClass,
          from_agent: p.fromAgent,
          to_agent: p.toAgent,
          reason: status,
          ...extra,
        },
        dedupeKey: `topology:${p.id}:rejected`,
      },
      now,
      pendingGuard(p.id),
    ),
    db
      .update(topologyProposals)
      .set({ status, resolvedAt: now.toISOString() })
      .where(and(eq(topologyProposals.id, p.id), eq(topologyProposals.status, "pending"))),
  ]);
}

/**
 * Approved → the override, consuming the approval in the same batch. The action is rebuilt from the
 * proposal as it stands; if it no longer hashes to what was approved it is refused (`action_changed`,
 * audited) and nothing is routed. The approval is single use: a second apply finds it consumed.
 */
async function applyApproved(
  db: Db,
  cfg: TopologyConfig,
  p: ProposalRow,
  approvedBy: string | null,
  now: Date,
): Promise<Resolution["outcome"]> {
  const check = await checkConsumable(db, p.approvalId, rerouteAction(p));
  if (!check.ok) {
    if (check.reason === "action_changed") {
      await closeProposal(db, p, "action_changed", now, {}, [actionChangedEvent(db, p.approvalId, check, "topology", now)]);
      return "action_changed";
    }
    console.error(`topology: approval ${p.approvalId} for ${p.id} cannot be used (${check.reason}); leaving the proposal pending`);
    return "pending";
  }
  const use = consumption(db, p.approvalId, check.hash, "topology", now);
  const overrideId = newId("ovr");
  const noOverrideInForce = sql`NOT EXISTS (SELECT 1 FROM ${routingOverrides} WHERE ${and(
    eq(routingOverrides.taskClass, p.taskClass),
    eq(routingOverrides.fromAgent, p.fromAgent),
    inArray(routingOverrides.status, ["active", "confirmed"]),
  )})`;
  const guard = sql`(${use.guard} AND ${pendingGuard(p.id)} AND ${noOverrideInForce})`;
  const created = sql`EXISTS (SELECT 1 FROM ${routingOverrides} WHERE id = ${overrideId})`;
  const at = now.toISOString();
  const observeUntil = new Date(now.getTime() + cfg.observe_hours * 3_600_000).toISOString();
  await db.batch([
    appendEventWhere(
      db,
      {
        type: "topology.approved",
        subject: p.id,
        payload: {
          proposal_id: p.id,
          approval_id: p.approvalId,
          override_id: overrideId,
          task_class: p.taskClass,
          from_agent: p.fromAgent,
          to_agent: p.toAgent,
          approved_by: approvedBy,
          observe_until: observeUntil,
          baseline_reject_rate: p.evidence.reject_rate,
        },
        dedupeKey: `topology:${p.id}:approved`,
      },
      now,
      guard,
    ),
    use.event(guard),
    insertWhere(
      db,
      routingOverrides,
      {
        id: overrideId,
        proposalId: p.id,
        approvalId: p.approvalId,
        taskClass: p.taskClass,
        fromAgent: p.fromAgent,
        toAgent: p.toAgent,
        status: "active",
        approvedAt: at,
        approvedBy,
        observeUntil,
        baselineRejectRate: p.evidence.reject_rate,
        baselineSamples: p.evidence.samples,
        extensions: 0,
      },
      guard,
    ),
    // After the insert the guard no longer holds; these follow whether the override exists.
    db
      .update(topologyProposals)
      .set({ status: "approved", resolvedAt: at })
      .where(and(eq(topologyProposals.id, p.id), eq(topologyProposals.status, "pending"), created)),
    use.consume(created),
  ]);
  return "approved";
}
