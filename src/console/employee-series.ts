import { and, eq, gte, lt, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { costEntries, predictionLog } from "../db/schema";
import { lastDays, overDays, type DayValue } from "./plot";

/** How many UTC days the employee page plots, today included. */
export const SERIES_DAYS = 30;

/** The employee page's plots (issue 37, "Watch"): what it cost and how well it predicted, per UTC day. */
export interface EmployeeSeries {
  days: string[];
  /** USD per day; a day whose jobs priced nothing is measured but unknown (a subscription runtime). */
  cost: DayValue[];
  /** Input + output tokens per day; unknown when no job of the day reported tokens. */
  tokens: DayValue[];
  /** Mean composite prediction error of the conversations closed that day. */
  predictionError: DayValue[];
  jobs: number;
  /** Jobs of the window that reported no price. */
  unpricedJobs: number;
  /** Conversations of the window the prediction engine scored. */
  scored: number;
}

const dayAfter = (day: string) => new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString().slice(0, 10);

/**
 * Two small aggregates over the last `SERIES_DAYS` UTC days of one employee: the spend ledger per
 * day (SUM over no reported value stays NULL, so unknown stays unknown) and the prediction log's
 * mean composite error per day.
 */
export async function employeeSeries(db: Db, employeeId: string, now: Date): Promise<EmployeeSeries> {
  const days = lastDays(now, SERIES_DAYS);
  const from = days[0]!;
  const to = days.at(-1)!;
  const tokens = sql<number | null>`SUM(CASE WHEN ${costEntries.inputTokens} IS NULL AND ${costEntries.outputTokens} IS NULL THEN NULL
    ELSE COALESCE(${costEntries.inputTokens}, 0) + COALESCE(${costEntries.outputTokens}, 0) END)`;
  const predictionDay = sql<string>`substr(${predictionLog.timestamp}, 1, 10)`;
  const [costRows, errorRows] = await Promise.all([
    db
      .select({
        day: costEntries.day,
        jobs: sql<number>`COUNT(*)`,
        cost: sql<number | null>`SUM(${costEntries.costUsd})`,
        priced: sql<number>`COUNT(${costEntries.costUsd})`,
        tokens,
      })
      .from(costEntries)
      .where(and(eq(costEntries.employeeId, employeeId), gte(costEntries.day, from), lte(costEntries.day, to)))
      .groupBy(costEntries.day),
    db
      .select({ day: predictionDay, error: sql<number>`AVG(${predictionLog.compositeError})`, n: sql<number>`COUNT(*)` })
      .from(predictionLog)
      .where(and(eq(predictionLog.agentId, employeeId), gte(predictionLog.timestamp, from), lt(predictionLog.timestamp, dayAfter(to))))
      .groupBy(predictionDay),
  ]);
  return {
    days,
    cost: overDays(days, new Map(costRows.map((r) => [r.day, r.priced > 0 ? r.cost : null]))),
    tokens: overDays(days, new Map(costRows.map((r) => [r.day, r.tokens]))),
    predictionError: overDays(days, new Map(errorRows.map((r) => [r.day, r.error]))),
    jobs: costRows.reduce((n, r) => n + r.jobs, 0),
    unpricedJobs: costRows.reduce((n, r) => n + r.jobs - r.priced, 0),
    scored: errorRows.reduce((n, r) => n + r.n, 0),
  };
}
