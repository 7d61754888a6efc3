import { getTableColumns, sql, type Column, type SQL, type SQLWrapper, type Table } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { routingOverrides, topologyInputs, topologyProposals, type OverrideRow, type ProposalRow } from "../db/schema";
import { deciderExpiriesQuery, liveAt } from "../approvals/channels";
import { approvalsConfig, type ApprovalsConfig } from "../approvals/config";
import { sectionRow, sectionValue } from "../lib/config";
import { observationQuery, type ObservedRow } from "./observe";
import type { SkipReason } from "./proposal";
import {
  heldEdgeQueries,
  heldMap,
  pendingProposalsQuery,
  recentProposalQuery,
  type HeldRows,
  type PendingRow,
  type ProposalWindow,
} from "./proposals";

/*
 * What the D5 tick decides on besides the evidence — the approvals section, the deciders, pending
 * proposals, overrides, the org — changes far less often than the tick runs. Every write to it gives
 * `topology_inputs` a new token (triggers, migrations/0009). The tick reads all of it as one statement
 * of its batch (`inputsQuery`: each query's rows as JSON), and an isolate that already holds a read at
 * the current token skips even that: the statement is guarded on the token having changed, so it reads
 * nothing when it has not. Every tick is one batch either way; the steady state's is the driver row,
 * the claim, an empty inputs read and the evidence.
 */

/**
 * The inputs as one read saw them at one token. Rows whose relevance moves with the clock are kept
 * wide enough to be judged at a later instant (`inputsAt`): every decider with its expiry, the newest
 * proposal of all, and the proposals that held an edge at the read (pending, or inside the cooldown,
 * which an edge only leaves as time goes on). Overrides under observation are judged on settled tasks,
 * which no token follows: while there are any (`observing`), every tick reads the inputs again.
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

/** Whether `snapshot` may stand in for a read at `now`. */
export const reusableAt = (snapshot: InputsSnapshot | null, now: Date): snapshot is InputsSnapshot =>
  snapshot !== null && snapshot.readAt <= now.toISOString();

/** A query's rows as one JSON array of arrays (`columns` in order), so several queries are read in one statement. */
function rowsJson(query: SQLWrapper, columns: readonly string[]): SQL {
  return sql`json((SELECT json_group_array(json_array(${sql.join(
    columns.map((c) => sql.identifier(c)),
    sql`, `,
  )})) FROM (${query})))`;
}

const columnsOf = (table: Table) => Object.entries(getTableColumns(table)) as [string, Column][];
const PROPOSAL_COLUMNS = columnsOf(topologyProposals);
const OVERRIDE_COLUMNS = columnsOf(routingOverrides);

/** A table's row from `values` (its columns from `start`, in `columnsOf` order), decoded as drizzle would. */
function tableRow<T>(columns: [string, Column][], values: readonly unknown[], start = 0): T {
  const row: Record<string, unknown> = {};
  columns.forEach(([key, column], i) => {
    const value = values[start + i];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  });
  return row as T;
}

/**
 * Everything the tick reads besides the evidence and the org (`orgQuery`, its own statement), as one statement (the token and one JSON value),
 * built from the same queries the rest of D5 reads them with. Zero rows unless `guard` holds.
 */
export function inputsQuery(db: Db, window: ProposalWindow, guard: SQL) {
  return db
    .select({ token: inputsToken, inputs: sql<string>`${inputsSql(db, window.cooldownStart)}`.as("inputs") })
    .from(sql`(SELECT 1)`)
    .where(guard);
}

/** The JSON of every input: the rows of each query, in the order `decodeInputs` reads them. */
function inputsExpression(db: Db, cooldownStart: string): SQL {
  const [heldProposals, heldOverrides] = heldEdgeQueries(db, cooldownStart);
  const names = (columns: [string, Column][]) => columns.map(([, c]) => c.name);
  return sql`json_array(
    (SELECT "value" FROM (${sectionRow(db, approvalsConfig)})),
    ${rowsJson(deciderExpiriesQuery(db), ["expires_at"])},
    ${rowsJson(pendingProposalsQuery(db), [...names(PROPOSAL_COLUMNS), "approval_status", "approval_expires_at"])},
    ${rowsJson(observationQuery(db), [...names(OVERRIDE_COLUMNS), "samples", "rejects"])},
    ${rowsJson(recentProposalQuery(db, null), ["created_at"])},
    ${rowsJson(heldProposals, ["task_class", "from_agent", "status", "created_at"])},
    ${rowsJson(heldOverrides, ["task_class", "from_agent"])}
  )`;
}

/*
 * Building `inputsExpression` with drizzle costs about 0.6 ms of CPU (eight queries' builders), as much
 * as the rest of a steady-state tick's own work: it is compiled once per isolate, with its parameters —
 * constants of the queries, and the cooldown's start — written in as SQL literals, and each tick puts
 * its own cooldown start in place of the placeholder one.
 */
const COOLDOWN_PLACEHOLDER = "0000-00-00T00:00:00.000Z";
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
let compiledInputs: string | null = null;

function inputsSql(db: Db, cooldownStart: string): SQL {
  if (!ISO_INSTANT.test(cooldownStart)) throw new Error(`topology inputs: not an instant: ${cooldownStart}`);
  compiledInputs ??= withLiterals(new SQLiteAsyncDialect().sqlToQuery(inputsExpression(db, COOLDOWN_PLACEHOLDER)));
  return sql.raw(compiledInputs.replaceAll(`'${COOLDOWN_PLACEHOLDER}'`, `'${cooldownStart}'`));
}

/** A compiled query's text with each `?` replaced by its parameter as an SQL literal (strings, numbers, null). */
function withLiterals({ sql: text, params }: { sql: string; params: unknown[] }): string {
  const parts = text.split("?");
  if (parts.length !== params.length + 1)
    throw new Error(`topology inputs: ${parts.length - 1} placeholders for ${params.length} parameters`);
  return parts.reduce((out, part, i) => out + literal(params[i - 1]) + part);
}

function literal(value: unknown): string {
  if (value === null) return "NULL";
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  throw new Error(`topology inputs: cannot write ${typeof value} as an SQL literal`);
}

/** The current token (null only if its row were missing: then nothing read is ever reused). */
const inputsToken = sql<string | null>`(SELECT ${topologyInputs.token} FROM ${topologyInputs} WHERE ${topologyInputs.id} = 1)`;

/** True once the inputs are no longer as they were at `token`: the guard of a read that a snapshot could replace. */
export const inputsChangedSince = (token: string): SQL => sql`${inputsToken} IS NOT ${token}`;

type Tuple = readonly unknown[];

/** The snapshot in one row of `inputsQuery` (and the org's rows beside it), and the overrides under observation as of this read. */
export function decodeInputs(
  row: { token: string | null; inputs: string },
  org: readonly { id: string; reportsTo: string | null }[],
  now: Date,
): { snapshot: InputsSnapshot; observed: ObservedRow[] } {
  const [approvals, deciders, pending, observed, newest, heldProposals, heldOverrides] = JSON.parse(row.inputs) as [
    string | null,
    Tuple[],
    Tuple[],
    Tuple[],
    Tuple[],
    Tuple[],
    Tuple[],
  ];
  const p = PROPOSAL_COLUMNS.length;
  const o = OVERRIDE_COLUMNS.length;
  const pendingRows: PendingRow[] = pending
    .map((v) => ({
      proposal: tableRow<ProposalRow>(PROPOSAL_COLUMNS, v),
      approvalStatus: v[p] as string | null,
      approvalExpiresAt: v[p + 1] as string | null,
    }))
    // Oldest first, as pendingProposalsQuery orders them (an aggregate need not keep a subquery's order).
    .sort((a, b) => compare(a.proposal.createdAt, b.proposal.createdAt) || compare(a.proposal.id, b.proposal.id));
  const observedRows: ObservedRow[] = observed.map((v) => ({
    override: tableRow<OverrideRow>(OVERRIDE_COLUMNS, v),
    samples: Number(v[o]),
    rejects: Number(v[o + 1]),
  }));
  return {
    snapshot: {
      token: row.token ?? "",
      readAt: now.toISOString(),
      approvalsConfig: sectionValue(approvalsConfig, approvals === null ? undefined : { value: parsedOrUndefined(approvals) }),
      deciders: deciders.map(([expiresAt]) => ({ expiresAt: expiresAt as string | null })),
      pending: pendingRows,
      newestProposalAt: (newest[0]?.[0] as string | undefined) ?? null,
      held: [
        heldProposals.map(([taskClass, fromAgent, status, createdAt]) => ({
          taskClass: taskClass as string,
          fromAgent: fromAgent as string,
          status: status as ProposalRow["status"],
          createdAt: createdAt as string,
        })),
        heldOverrides.map(([taskClass, fromAgent]) => ({ taskClass: taskClass as string, fromAgent: fromAgent as string })),
      ],
      org: org.map(({ id, reportsTo }) => ({ id, reportsTo })),
      observing: observedRows.length > 0,
    },
    observed: observedRows,
  };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A stored section that does not parse reads as the defaults, as `readSection` has it. */
function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
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
