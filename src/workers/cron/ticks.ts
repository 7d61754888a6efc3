import type { Env } from "../../env";
import { registry } from "../../lib/registry";
import { topologyTick } from "../../topology/driver";
import { approvalsTick } from "./approvals";
import { teamTick } from "../../team/round-handler";
import { councilTick } from "./council";
import { leasesTick } from "./leases";
import { CRONS, type CronExpression } from "./schedule";

/** Every tick name of the API; features register theirs below as they land. */
export const TICK_NAMES = ["council", "topology", "approvals", "leases", "evolution", "projects", "team"] as const;
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

/** The ticks built so far; `TICKS.get(name)` never reaches Object.prototype. */
export const TICKS: ReadonlyMap<TickName, Tick> = registry<TickName, Tick>({
  leases: { cron: CRONS.everyMinute, run: leasesTick },
  approvals: { cron: CRONS.everyMinute, run: approvalsTick },
  // Every minute from cron, but the driver works only once `tick_secs` have passed since its last run.
  topology: { cron: CRONS.everyMinute, run: topologyTick },
  team: { cron: CRONS.everyMinute, run: teamTick },
  council: { cron: [CRONS.hourly, CRONS.everyMinute], run: councilTick },
});

export function ticksFor(cron: string): [TickName, Tick][] {
  return [...TICKS].filter(([, tick]) => ([] as string[]).concat(tick.cron).includes(cron));
}
