import { and, eq, getTableColumns, isNull, lte, or, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getDb, type Db } from "../db/client";
import { settings, topologyDriver } from "../db/schema";
import type { Env } from "../env";
import { availability } from "../approvals/channels";
import { sectionValue } from "../lib/config";
import { appendEvent } from "../lib/events";
import { insertWhere } from "../lib/guarded-insert";
import { randomHex } from "../lib/ids";
import { topologyConfig, type TopologyConfig } from "./config";
import {
  evidenceCells,
  evidenceQuery,
  foldedRange,
  foldEvidence,
  foldNeeded,
  foldStatements,
  foldTarget,
  type FoldState,
} from "./evidence-sql";
import { decodeInputs, inputsAt, inputsChangedSince, inputsQuery, reusableAt, type InputsSnapshot } from "./inputs";
import { judgeObserved, observedVerdict } from "./observe";
import type { ProposalDecision } from "./proposal";
import {
  awaitingDecision,
  decideProposal,
  heldEdges,
  noCandidate,
  orgQuery,
  proposalWindow,
  proposeFrom,
  proposeOnce,
  recentProposal,
  recordProposal,
  resolvePendingProposals,
  type ProposeResult,
} from "./proposals";

/** How long one tick may hold the driver for writing before another may take over (clock time). */
const DRIVER_LEASE_MS = 5 * 60_000;

/**
 * What a tick takes as given when it builds its batch: the stored section (its text), the fold
 * watermark and, when this isolate has read them, the other inputs at their token (`inputs.ts`).
 */
interface Assumed {
  configText: string;
  cfg: TopologyConfig;
  folded: FoldState;
  inputs: InputsSnapshot | null;
}

/**
 * What the last tick in this isolate saw. The next tick builds its batch on it instead of reading the
 * switch first; the batch checks it (the claim holds only while the section's text and the watermark
 * are still these, and the inputs are read again unless their token is still the snapshot's), so a
 * stale value costs one more round trip, never a wrong answer.
 */
let lastSeen: Assumed | null = null;

/**
 * The D5 driver tick. Off (the default): nothing written (one read of the switch, with the driver row
 * beside it). On: from cron only when `tick_secs` have passed since the last tick, from the admin
 * endpoint at once; one tick writes at a time (a concurrent tick reports `busy`). In order: resolve
 * answered proposals, judge overrides under observation, then — only if the ApprovalBroker could
 * reach a human — at most one new proposal. Without a reachable broker D5 refuses to propose
 * (`topology.refused`, reason `approval_broker_unavailable`); observation and rollback keep running,
 * because they only ever undo a route a human approved.
 *
 * Cost (bench/topology-tick): one batch (`claimAndRead`) claims the tick and reads everything it
 * decides on: the evidence query, and the other inputs as one statement that reads nothing when this
 * isolate's last read of them is still current (`inputs.ts`). A tick with nothing to write — no
 * answered proposal, no observation verdict, no full fold due, no proposal (most ticks) — ends there:
 * one round trip, plus the switch's read in an isolate that has not ticked yet. Only a tick with
 * something to write takes the driver's write lease (`takeForWriting`), writes, and releases it.
 */
export async function topologyTick(env: Env, now: Date, cron?: string): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const at = now.toISOString();
  let assumed: Assumed;
  if (lastSeen !== null) assumed = lastSeen;
  else {
    const [configRows, driverRows] = await db.batch([configTextQuery(db), driverQuery(db)]);
    const seen = (lastSeen = seenFrom(configRows[0], driverRows[0]));
    if (seen === null) return { enabled: false };
    assumed = seen;
    // Known busy or not due: stop here (the claim tests both again, atomically).
    const driver = driverRows[0];
    if (driver?.leaseUntil && driver.leaseUntil > at) return { enabled: true, ran: false, reason: "busy" };
    if (cron !== undefined && driver?.lastTickAt && driver.lastTickAt > dueCutoff(now, assumed.cfg.tick_secs)) {
      return { enabled: true, ran: false, reason: "not_due" };
    }
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
  let read: Claimed;
  let batches = 0; // claim-and-read batches this tick ran: 1, or 2 when what it assumed had changed
  for (;;) {
    batches++;
    const r: Awaited<ReturnType<typeof claimAndRead>> = await timed("read", claimAndRead(db, now, cron !== undefined, assumed));
    lastSeen = r.seen;
    if (r.seen === null) return { enabled: false };
    if (r.claimed) {
      read = r;
      break;
    }
    // The section or the watermark changed since they were read: once more on what this batch saw.
    // (Changing again and again under a tick is not a thing people do; a third miss is reported busy.)
    if (r.reason !== "stale") return { enabled: true, ran: false, reason: r.reason };
    if (batches === 3) return { enabled: true, ran: false, reason: "busy" };
    assumed = r.seen;
  }
  const cfg = read.cfg;

  const broker = availability(env, read.deciders, read.approvalsConfig);
  const quiet =
    broker.available &&
    read.evidence !== null &&
    read.pending.every((p) => awaitingDecision(p, now)) &&
    read.observed.every((o) => observedVerdict(cfg, now, o).verdict === "keep");
  let decision: ProposalDecision | null = null;
  if (quiet) {
    // Nothing to resolve, judge or fold: these write nothing, and neither does a tick proposing nothing.
    const resolved = await resolvePendingProposals(db, cfg, now, read.pending);
    const observed = await judgeObserved(db, cfg, now, read.observed);
    const done = (proposal: ProposeResult) => ({
      enabled: true,
      ran: true,
      resolved,
      observed,
      proposal,
      ms,
      batches,
      inputs: read.inputs,
    });
    if (read.recent) return done({ proposal_id: null, reason: "proposed_this_period", last_proposal_at: read.recent.createdAt });
    decision = decideProposal(cfg, { cells: read.evidence!, org: read.org, held: read.held });
    if (!decision.proposal) return done(noCandidate(decision));
  }

  if (!(await timed("lease", takeForWriting(db, read.token, now)))) return { enabled: true, ran: false, reason: "busy" };
  try {
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
      return {
        enabled: true,
        ran: true,
        resolved,
        observed,
        proposal: null,
        refused: "approval_broker_unavailable",
        ms,
        batches,
        inputs: read.inputs,
      };
    }
    // A resolution or verdict just written can free or hold an edge: then the held edges are read again.
    const changed = resolved.some((r) => r.outcome !== "pending") || observed.some((o) => o.verdict !== "keep");
    if (read.evidence === null) {
      // A full fold is due (see `foldNeeded`): timed on its own; the next tick here builds on its watermark.
      const { folded } = await timed("fold", foldEvidence(db, now, read.window.since, read.folded));
      read.folded = { foldedFrom: folded?.from ?? null, foldedThrough: folded?.through ?? null };
      if (lastSeen) lastSeen = { ...lastSeen, folded: read.folded };
    }
    const proposal = await timed("propose", propose(env, db, now, read, decision, changed));
    return { enabled: true, ran: true, resolved, observed, proposal, ms, batches, inputs: read.inputs };
  } finally {
    // What this tick wrote changed the inputs' token where it touched them, so the next tick's batch
    // reads them again: the snapshot needs no dropping here.
    await db.update(topologyDriver).set({ leaseUntil: null }).where(eq(topologyDriver.leaseToken, read.token));
  }
}

const dueCutoff = (now: Date, dueAfterSecs: number) => new Date(now.getTime() - dueAfterSecs * 1000).toISOString();

/** The section's stored JSON as text (zero or one row): what the claim compares the assumption with. */
function configTextQuery(db: Db) {
  return db
    .select({ text: sql<string>`${settings.value}` })
    .from(settings)
    .where(eq(settings.section, topologyConfig.name))
    .limit(1);
}

/**
 * The driver row, with the section's text beside it: what a failed claim is explained by, and what the
 * next batch then builds on.
 */
function driverQuery(db: Db) {
  return db
    .select({
      ...getTableColumns(topologyDriver),
      configText: sql<string | null>`(SELECT ${settings.value} FROM ${settings} WHERE ${settings.section} = ${topologyConfig.name})`.as(
        "config_text",
      ),
    })
    .from(topologyDriver)
    .where(eq(topologyDriver.id, 1))
    .limit(1);
}

type DriverRow = Awaited<ReturnType<typeof driverQuery>>[number];

/** What a read of the section and the driver row means for the next batch; null when D5 is off. */
function seenFrom(
  configRow: { text: string } | undefined,
  driverRow: { foldedFrom: string | null; foldedThrough: string | null } | undefined,
): Assumed | null {
  if (configRow === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(configRow.text);
  } catch {
    value = undefined; // unreadable: the defaults, as readSection does with a row that does not parse
  }
  const cfg = sectionValue(topologyConfig, value === undefined ? undefined : { value });
  if (!cfg.enabled) return null;
  return {
    configText: configRow.text,
    cfg,
    folded: { foldedFrom: driverRow?.foldedFrom ?? null, foldedThrough: driverRow?.foldedThrough ?? null },
    inputs: null,
  };
}

type Claimed = Extract<Awaited<ReturnType<typeof claimAndRead>>, { claimed: true }>;

/**
 * One batch (one round trip, atomic). It claims the tick with one conditional update — the driver not
 * held for writing (or its holder's lease lapsed), for cron due, the section's text and the watermark
 * still as assumed — recording this tick's token and time. Then, only if this tick holds the claim
 * (`mine`): moves the counters' watermark when a step is due (`foldNeeded`: at most once per
 * FOLD_STEP_MS; a full fold is left to the write path), reads the inputs in one statement unless this
 * isolate's snapshot of them is still current (`inputs.ts`) and — unless a full fold is due or this
 * period already has a proposal — the evidence query, over the counters as the step left them. A batch
 * that claims nothing reads next to nothing and writes only the driver row's first insert: the fold and
 * the evidence read empty ranges, the inputs read is filtered on `mine`.
 */
async function claimAndRead(db: Db, now: Date, fromCron: boolean, assumed: Assumed) {
  const at = now.toISOString();
  const { cfg, configText, folded } = assumed;
  // While overrides are under observation their verdicts need this tick's settled tasks: read it all.
  const snapshot = reusableAt(assumed.inputs, now) && !assumed.inputs.observing ? assumed.inputs : null;
  const token = randomHex(8);
  const window = proposalWindow(cfg, now);
  const sectionUnchanged = sql`EXISTS (SELECT 1 FROM ${settings} WHERE ${settings.section} = ${topologyConfig.name} AND ${settings.value} = ${configText})`;
  const free = or(isNull(topologyDriver.leaseUntil), lte(topologyDriver.leaseUntil, at));
  const due = fromCron ? or(isNull(topologyDriver.lastTickAt), lte(topologyDriver.lastTickAt, dueCutoff(now, cfg.tick_secs))) : undefined;
  const watermark: SQL = sql`${topologyDriver.foldedFrom} IS ${folded.foldedFrom} AND ${topologyDriver.foldedThrough} IS ${folded.foldedThrough}`;
  const mine = sql`EXISTS (SELECT 1 FROM ${topologyDriver} WHERE ${topologyDriver.id} = 1 AND ${topologyDriver.leaseToken} = ${token})`;
  const need = foldNeeded(now, window.since, folded);
  const step = need === "step" ? foldStatements(db, folded, window.since, foldTarget(now), mine) : null;
  // The section's text (read even when there is no driver row yet) and the driver row's first insert,
  // only when no earlier tick here has seen the row.
  const head = snapshot ? [] : [configTextQuery(db), insertWhere(db, topologyDriver, { id: 1 }, sectionUnchanged).onConflictDoNothing()];
  const inputsGuard = snapshot ? sql`(${mine} AND ${inputsChangedSince(snapshot.token)})` : mine;
  const claim = [
    driverQuery(db),
    db
      .update(topologyDriver)
      .set({ leaseToken: token, lastTickAt: at })
      .where(and(eq(topologyDriver.id, 1), free, due, watermark, sectionUnchanged))
      .returning({ id: topologyDriver.id }),
    inputsQuery(db, window, inputsGuard),
    // The org as rows, read exactly when the rest is (same guard, same batch, so the same token): it grows
    // with the company, and one SQL value is limited to 2,000,000 bytes (D1), which rows are not.
    orgQuery(db, inputsGuard),
  ] as const;
  const evidence = evidenceQuery(
    db,
    window.since,
    step ? step.folded : foldedRange(folded),
    // Also skipped (an empty index range) when this period already has a proposal: the rule would not run.
    need === "full" ? sql`0` : sql`(${mine} AND NOT ${recentProposal(window.periodStart)})`,
  );
  // The fold's statements (when stepping) run after the claim and before the evidence that reads them.
  const statements = [...head, ...claim, ...(step ? step.statements : []), evidence] as BatchItem<"sqlite">[];
  const results = (await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]])) as unknown[];
  const [driverRows, claimed, inputsRows, orgRows] = results.slice(head.length, head.length + 4) as [
    DriverRow[],
    { id: number }[],
    Awaited<ReturnType<typeof inputsQuery>>,
    Awaited<ReturnType<typeof orgQuery>>,
  ];
  const evidenceRows = results.at(-1) as Awaited<typeof evidence>;
  const driver = driverRows[0];
  if (claimed.length === 0) {
    // No row under a snapshot (a database reset): the next batch reads the section and inserts the row.
    if (snapshot && driver === undefined) return { claimed: false as const, seen: { ...assumed, inputs: null }, reason: "stale" };
    // Read (beside the driver row, or on its own when there was no snapshot) and parsed only here: a
    // claim proves the section is still the text this tick was built on.
    const text = snapshot ? driver?.configText : (results[0] as { text: string }[])[0]?.text;
    const seen = seenFrom(text == null ? undefined : { text }, driver);
    const stale =
      seen === null ||
      seen.configText !== configText ||
      seen.folded.foldedFrom !== folded.foldedFrom ||
      seen.folded.foldedThrough !== folded.foldedThrough;
    const reason = stale ? "stale" : driver?.leaseUntil && driver.leaseUntil > at ? "busy" : "not_due";
    // Kept for the next tick unless the section changed (whatever changed it also changed the token).
    return { claimed: false as const, seen: seen && { ...seen, inputs: seen.configText === configText ? assumed.inputs : null }, reason };
  }
  // The claim proved the watermark was as assumed, so the step's statements ran (same conditions).
  const after: FoldState = step ? { foldedFrom: step.folded.from, foldedThrough: step.folded.through } : folded;
  const fresh = inputsRows[0] ? decodeInputs(inputsRows[0], orgRows, now) : null;
  // No row: the guard found the token unchanged, so the snapshot stands (and nothing is under observation).
  const inputs = fresh?.snapshot ?? snapshot;
  if (inputs === null) throw new Error("topology tick: a claimed batch without a snapshot read no inputs");
  return {
    claimed: true as const,
    seen: { ...assumed, folded: after, inputs: inputs.token === "" ? null : inputs },
    inputs: fresh ? ("read" as const) : ("reused" as const),
    token,
    cfg,
    window,
    folded: after,
    observed: fresh?.observed ?? [],
    ...inputsAt(inputs, window, now),
    // Built on the watermark the claim proved current (and the step moved); null: a full fold is due.
    evidence: need === "full" ? null : evidenceCells(evidenceRows),
  };
}

/**
 * Takes the driver for writing: only the tick whose claim is the latest (no other tick has claimed
 * since, so what it read is what it acts on) and only while no other tick holds it. Of two ticks that
 * overlap, at most one writes; the other reports `busy`.
 */
async function takeForWriting(db: Db, token: string, now: Date): Promise<boolean> {
  const at = now.toISOString();
  const taken = await db
    .update(topologyDriver)
    .set({ leaseUntil: new Date(now.getTime() + DRIVER_LEASE_MS).toISOString() })
    .where(
      and(
        eq(topologyDriver.id, 1),
        eq(topologyDriver.leaseToken, token),
        or(isNull(topologyDriver.leaseUntil), lte(topologyDriver.leaseUntil, at)),
      ),
    )
    .returning({ id: topologyDriver.id });
  return taken.length > 0;
}

/**
 * The proposal step under the write lease, from the batch's reads. After a full fold (the batch could
 * not read the evidence): `proposeOnce` reads it and the rest again (the first tick after D5 is
 * enabled, and after a reset). Otherwise the batch's reads stand, except that when a resolution or
 * verdict was just written (`changed`), which edges are held is read again and the rule runs again.
 */
async function propose(
  env: Env,
  db: Db,
  now: Date,
  read: Claimed,
  decided: ProposalDecision | null,
  changed: boolean,
): Promise<ProposeResult> {
  const { cfg, window } = read;
  if (read.evidence === null) return proposeOnce(env, db, cfg, now, read.folded);
  if (read.recent) return { proposal_id: null, reason: "proposed_this_period", last_proposal_at: read.recent.createdAt };
  if (decided && !changed) return recordProposal(env, db, cfg, now, window, decided);
  const held = changed ? await heldEdges(db, window.cooldownStart) : read.held;
  return proposeFrom(env, db, cfg, now, window, { cells: read.evidence, org: read.org, held });
}

/** Whether the driver would run now from cron (for views). */
export async function driverState(db: Db) {
  const row = await db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get();
  return { last_tick_at: row?.lastTickAt ?? null, running: Boolean(row?.leaseUntil) };
}
