import { and, asc, gte, lte, sql, type AnyColumn } from "drizzle-orm";
import type { Db } from "../db/client";
import { costEntries } from "../db/schema";

export const LEDGER_GROUPS = ["employee", "model", "runtime", "project", "day"] as const;
export type LedgerGroup = (typeof LEDGER_GROUPS)[number];

/**
 * One group of the cost ledger. A sum no job of the group reported is `"unknown"`, never 0; a
 * partly reported one counts what was reported, and `jobs_without_cost` says how many jobs priced
 * nothing (a subscription runtime reports tokens but no price).
 */
export interface LedgerRow {
  /** The employee, model, runtime, project or UTC day; null when the jobs named none (no employee, no model reported). */
  key: string | null;
  jobs: number;
  input_tokens: number | "unknown";
  output_tokens: number | "unknown";
  cache_read_input_tokens: number | "unknown";
  cache_creation_input_tokens: number | "unknown";
  cost_usd: number | "unknown";
  jobs_without_cost: number;
}

const GROUP_COLUMN: Record<LedgerGroup, AnyColumn> = {
  employee: costEntries.employeeId,
  model: costEntries.model,
  runtime: costEntries.runtime,
  project: costEntries.projectId,
  day: costEntries.day,
};

const summed = (column: AnyColumn) => ({ sum: sql<number | null>`SUM(${column})`, n: sql<number>`COUNT(${column})` });
const figure = (f: { sum: number | null; n: number }): number | "unknown" => (f.n > 0 ? (f.sum ?? 0) : "unknown");

/** The ledger between two UTC days (inclusive, `YYYY-MM-DD`), grouped; days oldest first, else the costliest first. */
export async function costLedger(db: Db, groupBy: LedgerGroup, from: string, to: string): Promise<LedgerRow[]> {
  const key = GROUP_COLUMN[groupBy];
  const input = summed(costEntries.inputTokens);
  const output = summed(costEntries.outputTokens);
  const cacheRead = summed(costEntries.cacheReadInputTokens);
  const cacheCreation = summed(costEntries.cacheCreationInputTokens);
  const cost = summed(costEntries.costUsd);
  const rows = await db
    .select({
      key: sql<string | null>`${key}`,
      jobs: sql<number>`COUNT(*)`,
      inputSum: input.sum,
      inputN: input.n,
      outputSum: output.sum,
      outputN: output.n,
      cacheReadSum: cacheRead.sum,
      cacheReadN: cacheRead.n,
      cacheCreationSum: cacheCreation.sum,
      cacheCreationN: cacheCreation.n,
      costSum: cost.sum,
      costN: cost.n,
    })
    .from(costEntries)
    .where(and(gte(costEntries.day, from), lte(costEntries.day, to)))
    .groupBy(sql`${key}`)
    .orderBy(groupBy === "day" ? asc(key) : sql`COALESCE(SUM(${costEntries.costUsd}), -1) DESC, COUNT(*) DESC, ${key}`);
  return rows.map((r) => ({
    key: r.key,
    jobs: r.jobs,
    input_tokens: figure({ sum: r.inputSum, n: r.inputN }),
    output_tokens: figure({ sum: r.outputSum, n: r.outputN }),
    cache_read_input_tokens: figure({ sum: r.cacheReadSum, n: r.cacheReadN }),
    cache_creation_input_tokens: figure({ sum: r.cacheCreationSum, n: r.cacheCreationN }),
    cost_usd: figure({ sum: r.costSum, n: r.costN }),
    jobs_without_cost: r.jobs - r.costN,
  }));
}

/** The first and last UTC day of a month (`YYYY-MM`). */
export function monthDays(month: string): { from: string; to: string } {
  const [year, mon] = month.split("-").map(Number) as [number, number];
  const last = new Date(Date.UTC(year, mon, 0)).getUTCDate();
  return { from: `${month}-01`, to: `${month}-${String(last).padStart(2, "0")}` };
}
