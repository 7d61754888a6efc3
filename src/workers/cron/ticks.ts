import type { Env } from "../../env";
import { councilTick } from "./council";
import { leasesTick } from "./leases";
import { CRONS, type CronExpression } from "./schedule";

/** Every tick name of the API; features register theirs below as they land. */
export const TICK_NAMES = ["council", "topology", "approvals", "leases", "evolution", "projects"] as const;
export type TickName = (typeof TICK_NAMES)[number];

export interface Tick {
  /**
   * The schedule(s) it runs on. A tick with more than one (council: hourly terms, every-minute
   * sessions) is told which cron fired, so each schedule does only its own part; run by hand
   * (`POST /v1/admin/ticks/:name`) it gets no cron and does every part.
   */
  cron: CronExpression | readonly CronExpression[];
  run(env: Env, now: Date, cron?: CronExpression): Promise<Record<string, unknown>>;
}

export const TICKS: Partial<Record<TickName, Tick>> = {
  leases: { cron: CRONS.everyMinute, run: leasesTick },
  council: { cron: [CRONS.hourly, CRONS.everyMinute], run: councilTick },
};

export function ticksFor(cron: string): [TickName, Tick][] {
  return (Object.entries(TICKS) as [TickName, Tick][]).filter(([, tick]) => ([] as string[]).concat(tick.cron).includes(cron));
}
