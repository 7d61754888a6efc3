import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { topologyInputs } from "../db/schema";
import { deciderExpiriesQuery, liveAt } from "../approvals/channels";
import { approvalsConfig, type ApprovalsConfig } from "../approvals/config";
import { sectionRow, sectionValue } from "../lib/config";
import { observationQuery, type ObservedRow } from "./observe";
import type { SkipReason } from "./proposal";
import {
  heldEdgeQueries,
  heldMap,
  orgQuery,
  pendingProposalsQuery,
  recentProposalQuery,
  type HeldRows,
  type PendingRow,
  type ProposalWindow,
} from "./proposals";

/*
 * What the D5 tick decides on besides the evidence — the approvals section, the deciders, pending
 * proposals, overrides, the org — changes far less often than the tick runs. Every write to it gives
 * `topology_inputs` a new token (triggers, migrations/0009), so a tick that read it at token T can
 * reuse what it read for as long as the token is still T, and its claim checks exactly that in the
 * same batch as the evidence. A tick whose isolate holds a current snapshot therefore sends three
 * statements (driver row, claim, evidence) instead of thirteen.
 */

/**
 * The inputs as one claimed batch read them at one token. Rows whose relevance moves with the clock
 * are kept wide enough to be judged at a later instant (`inputsAt`): every decider with its expiry,
 * the newest proposal of all, and the proposals that held an edge at the read (pending, or inside the
 * cooldown, which an edge only leaves as time goes on). Overrides under observation are not kept:
 * their verdict counts settled tasks, which no token follows, so while there are any (`observing`)
 * every tick reads them again.
 */
export interface InputsSnapshot {
  token: string;
  /** The instant of the read: a clock that has gone back since (the test clock can) cannot reuse it. */
  readAt: string;
  approvalsConfig: ApprovalsConfig;
  deciders: { expiresAt: string | null }[];
  pending: PendingRow[];
  newestProposalAt: string | null;
  held: HeldRows;
  org: { id: string; reportsTo: string | null }[];
  observing: boolean;
}

/** The current token, as a column to read beside the driver row (null before the migration's row exists). */
export const inputsTokenColumn = () =>
  sql<string | null>`(SELECT ${topologyInputs.token} FROM ${topologyInputs} WHERE ${topologyInputs.id} = 1)`.as("inputs_token");

/** True while the inputs are as they were at `token`: the condition a tick reusing a snapshot claims under. */
export const inputsUnchanged = (token: string): SQL =>
  sql`EXISTS (SELECT 1 FROM ${topologyInputs} WHERE ${topologyInputs.id} = 1 AND ${topologyInputs.token} = ${token})`;

/** Whether `snapshot` may stand in for a read at `now`. */
export const reusableAt = (snapshot: InputsSnapshot | null, now: Date): snapshot is InputsSnapshot =>
  snapshot !== null && snapshot.readAt <= now.toISOString();

/** The statements that read the inputs (each under `guard`), in the order `snapshotFrom` takes their rows. */
export function inputsQueries(db: Db, window: ProposalWindow, guard: SQL) {
  const [heldProposals, heldOverrides] = heldEdgeQueries(db, window.cooldownStart, guard);
  return [
    sectionRow(db, approvalsConfig),
    deciderExpiriesQuery(db, guard),
    pendingProposalsQuery(db, guard),
    observationQuery(db, undefined, guard),
    recentProposalQuery(db, null, guard),
    orgQuery(db, guard),
    heldProposals,
    heldOverrides,
  ] as const;
}

type InputsRows = { -readonly [K in keyof ReturnType<typeof inputsQueries>]: Awaited<ReturnType<typeof inputsQueries>[K]> };

/** The snapshot of the rows `inputsQueries` read at `token`, and the observed overrides of this read. */
export function snapshotFrom(token: string, now: Date, rows: InputsRows): { snapshot: InputsSnapshot; observed: ObservedRow[] } {
  const [approvalsRows, deciders, pending, observed, newest, org, heldProposals, heldOverrides] = rows;
  return {
    snapshot: {
      token,
      readAt: now.toISOString(),
      approvalsConfig: sectionValue(approvalsConfig, approvalsRows[0]),
      deciders,
      pending,
      newestProposalAt: newest[0]?.createdAt ?? null,
      held: [heldProposals, heldOverrides],
      org,
      observing: observed.length > 0,
    },
    observed,
  };
}

/** What the tick decides on, from a snapshot, at `now` (pure: the clock-dependent filters of the queries, in JS). */
export function inputsAt(snapshot: InputsSnapshot, window: ProposalWindow, now: Date) {
  const [proposals, overrides] = snapshot.held;
  return {
    approvalsConfig: snapshot.approvalsConfig,
    deciders: liveAt(snapshot.deciders, now),
    pending: snapshot.pending,
    recent:
      snapshot.newestProposalAt !== null && snapshot.newestProposalAt > window.periodStart
        ? { createdAt: snapshot.newestProposalAt }
        : null,
    org: snapshot.org,
    held: heldMap([proposals.filter((p) => p.status === "pending" || p.createdAt > window.cooldownStart), overrides]) as Map<
      string,
      SkipReason
    >,
  };
}
