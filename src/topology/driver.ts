import { and, eq, isNull, lte, or, sql } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { topologyDriver } from "../db/schema";
import type { Env } from "../env";
import { availability, liveDecidersQuery } from "../approvals/channels";
import { approvalsConfig } from "../approvals/config";
import { sectionRow, sectionValue } from "../lib/config";
import { appendEvent } from "../lib/events";
import { randomHex } from "../lib/ids";
import { topologyConfig, type TopologyConfig } from "./config";
import { evidenceCells, evidenceQuery, foldDue, foldedRange, type FoldState } from "./evidence-sql";
import { judgeObserved, observationQuery } from "./observe";
import {
  heldEdgeQueries,
  heldEdges,
  heldMap,
  orgQuery,
  pendingProposalsQuery,
  proposalWindow,
  proposeFrom,
  proposeOnce,
  recentProposal,
  recentProposalQuery,
  resolvePendingProposals,
  type ProposeResult,
} from "./proposals";

/** How long one tick may hold the driver before another may take over (clock time). */
const DRIVER_LEASE_MS = 5 * 60_000;

/**
 * The D5 driver tick. Off (the default): one read (the switch, with the driver row beside it) and
 * nothing written. On: one tick at a time (a lease row; a concurrent tick reports `busy`), from cron
 * only when `tick_secs` have passed since the last one, from the admin endpoint at once. In order:
 * resolve answered proposals, judge overrides under observation, then — only if the ApprovalBroker
 * could reach a human — at most one new proposal. Without a reachable broker D5 refuses to propose
 * (`topology.refused`, reason `approval_broker_unavailable`); observation and rollback keep running,
 * because they only ever undo a route a human approved.
 *
 * Round trips (bench/topology-tick): the switch; one batch that claims the driver and reads, under
 * the claim, everything the tick decides on (see `claimAndRead`); the lease's release. Writes follow
 * only when something is due: an answered proposal, an observation verdict, a day to fold, a proposal.
 */
export async function topologyTick(env: Env, now: Date, cron?: string): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const at = now.toISOString();
  const [configRows, driverRows] = await db.batch([
    sectionRow(db, topologyConfig),
    db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).limit(1),
  ]);
  const cfg = sectionValue(topologyConfig, configRows[0]);
  if (!cfg.enabled) return { enabled: false };
  // From cron (`cron` set) only when due; run by hand (no cron) at once. Known busy or not due: stop
  // here (the claim below tests both again, atomically, for whatever changed since this read).
  const dueAfterSecs = cron !== undefined ? cfg.tick_secs : null;
  const seen = driverRows[0];
  if (seen?.leaseUntil && seen.leaseUntil > at) return { enabled: true, ran: false, reason: "busy" };
  if (dueAfterSecs !== null && seen?.lastTickAt && seen.lastTickAt > dueCutoff(now, dueAfterSecs)) {
    return { enabled: true, ran: false, reason: "not_due" };
  }

  // Wall time per phase, so a slow tick says where (Workers' clock moves on I/O, which is what these wait on).
  const ms: Record<string, number> = {};
  const timed = async <T>(phase: string, work: Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work;
    } finally {
      ms[phase] = Math.round(performance.now() - started);
    }
  };
  const known: FoldState = { foldedFrom: seen?.foldedFrom ?? null, foldedThrough: seen?.foldedThrough ?? null };
  const read = await timed("read", claimAndRead(db, cfg, now, dueAfterSecs, known));
  if (!read.claimed) return { enabled: true, ran: false, reason: read.reason };
  try {
    const broker = availability(env, read.deciders, read.approvalsConfig);
    // An override approved while resolving has nothing to observe yet, so judging the overrides read
    // before the resolution judges the same ones.
    const resolved = await timed("resolve", resolvePendingProposals(db, cfg, now, read.pending));
    const observed = await timed("observe", judgeObserved(db, cfg, now, read.observed));
    if (!broker.available) {
      await appendEvent(
        db,
        {
          type: "topology.refused",
          subject: "topology",
          payload: { reason: "approval_broker_unavailable", deciders: broker.deciders, channels: broker.channels },
        },
        now,
      );
      return { enabled: true, ran: true, resolved, observed, proposal: null, refused: "approval_broker_unavailable", ms };
    }
    // A resolution or verdict just written can free or hold an edge: then the held edges are read again.
    const changed = resolved.some((r) => r.outcome !== "pending") || observed.some((o) => o.verdict !== "keep");
    const proposal = await timed("propose", propose(env, db, cfg, now, read, changed));
    return { enabled: true, ran: true, resolved, observed, proposal, ms };
  } finally {
    await db.update(topologyDriver).set({ leaseUntil: null, leaseToken: null }).where(eq(topologyDriver.leaseToken, read.token));
  }
}

const dueCutoff = (now: Date, dueAfterSecs: number) => new Date(now.getTime() - dueAfterSecs * 1000).toISOString();

type TickRead = Awaited<ReturnType<typeof claimAndRead>>;
type Claimed = Extract<TickRead, { claimed: true }>;

/**
 * The proposal step from the batch's reads. They stand unless the counters' watermark moved between
 * the first read and the claim, or a day is due to be folded: then `proposeOnce` folds and reads again
 * (about once a day, and on the first tick after D5 is enabled).
 */
async function propose(env: Env, db: Db, cfg: TopologyConfig, now: Date, read: Claimed, changed: boolean): Promise<ProposeResult> {
  if (read.evidence === null) return proposeOnce(env, db, cfg, now, read.folded);
  if (read.recent) return { proposal_id: null, reason: "proposed_this_period", last_proposal_at: read.recent.createdAt };
  const held = changed ? await heldEdges(db, read.window.cooldownStart) : read.held;
  return proposeFrom(env, db, cfg, now, read.window, { cells: read.evidence, org: read.org, held });
}

/**
 * One batch (one round trip, atomic): claim the driver with one conditional update (free, or its
 * holder's lease lapsed, and for cron, due; two ticks at once: exactly one claims it), then, only if
 * this tick holds the claim, everything the tick decides on: the approvals section and the live
 * deciders (broker availability), pending proposals with their approvals, the overrides under
 * observation, this period's proposal, the org, the held edges and — unless a day is due to be folded
 * or this period already has a proposal — the evidence query. A tick that did not claim the driver
 * reads next to nothing: every read but the two one-row ones is conditional on the claim (`mine`).
 */
async function claimAndRead(db: Db, cfg: TopologyConfig, now: Date, dueAfterSecs: number | null, known: FoldState) {
  const at = now.toISOString();
  const token = randomHex(8);
  const window = proposalWindow(cfg, now);
  const free = or(isNull(topologyDriver.leaseUntil), lte(topologyDriver.leaseUntil, at));
  const due = dueAfterSecs === null ? undefined : or(isNull(topologyDriver.lastTickAt), lte(topologyDriver.lastTickAt, dueCutoff(now, dueAfterSecs)));
  const mine = sql`EXISTS (SELECT 1 FROM ${topologyDriver} WHERE ${topologyDriver.id} = 1 AND ${topologyDriver.leaseToken} = ${token})`;
  // Built on the watermark read before the claim; used only if the claim returns the same one.
  const withEvidence = !foldDue(now, window.since, known);
  const [heldProposals, heldOverrides] = heldEdgeQueries(db, window.cooldownStart, mine);
  const [, claimed, driver, approvalsRows, deciders, pending, observed, recent, org, proposalsHeld, overridesHeld, evidence] = await db.batch([
    db.insert(topologyDriver).values({ id: 1 }).onConflictDoNothing(),
    db
      .update(topologyDriver)
      .set({ leaseUntil: new Date(now.getTime() + DRIVER_LEASE_MS).toISOString(), leaseToken: token, lastTickAt: at })
      .where(and(eq(topologyDriver.id, 1), free, due))
      .returning({ foldedFrom: topologyDriver.foldedFrom, foldedThrough: topologyDriver.foldedThrough }),
    db.select({ leaseUntil: topologyDriver.leaseUntil }).from(topologyDriver).where(eq(topologyDriver.id, 1)),
    sectionRow(db, approvalsConfig),
    liveDecidersQuery(db, now),
    pendingProposalsQuery(db, mine),
    observationQuery(db, undefined, mine),
    recentProposalQuery(db, window.periodStart, mine),
    orgQuery(db, mine),
    heldProposals,
    heldOverrides,
    // Also skipped (an empty index range) when this period already has a proposal: the rule would not run.
    evidenceQuery(db, window.since, foldedRange(known), withEvidence ? sql`(${mine} AND NOT ${recentProposal(window.periodStart)})` : sql`0`),
  ]);
  const folded = claimed[0];
  if (!folded) {
    return { claimed: false as const, reason: driver[0]?.leaseUntil && driver[0].leaseUntil > at ? ("busy" as const) : ("not_due" as const) };
  }
  const sameWatermark = folded.foldedFrom === known.foldedFrom && folded.foldedThrough === known.foldedThrough;
  return {
    claimed: true as const,
    token,
    window,
    folded,
    approvalsConfig: sectionValue(approvalsConfig, approvalsRows[0]),
    deciders: deciders[0]?.n ?? 0,
    pending,
    observed,
    recent: recent[0] ?? null,
    org,
    held: heldMap([proposalsHeld, overridesHeld]),
    evidence: withEvidence && sameWatermark ? evidenceCells(evidence) : null,
  };
}

/** Whether the driver would run now from cron (for views). */
export async function driverState(db: Db) {
  const row = await db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get();
  return { last_tick_at: row?.lastTickAt ?? null, running: Boolean(row?.leaseToken) };
}
