import type { Env } from "../../env";
import { registry } from "../../lib/registry";
import { topologyTick } from "../../topology/driver";
import { approvalsTick } from "./approvals";
import { teamTick } from "../../team/round-handler";
import { leasesTick } from "./leases";
import { CRONS, type CronExpression } from "./schedule";

/** Every tick name of the API; features register theirs below as they land. */
export const TICK_NAMES = ["council", "topology", "approvals", "leases", "evolution", "projects", "team"] as const;
export type TickName = (typeof TICK_NAMES)[number];

/** Who started a tick: cron runs only what is due; an admin run (`POST /v1/admin/ticks/:name`) runs now. */
export type TickTrigger = "cron" | "admin";

export interface Tick {
  cron: CronExpression;
  run(env: Env, now: Date, trigger: TickTrigger): Promise<Record<string, unknown>>;
}

/** The ticks built so far; `TICKS.get(name)` never reaches Object.prototype. */
export const TICKS: ReadonlyMap<TickName, Tick> = registry<TickName, Tick>({
  leases: { cron: CRONS.everyMinute, run: leasesTick },
  approvals: { cron: CRONS.everyMinute, run: approvalsTick },
  // Every minute from cron, but the driver works only once `tick_secs` have passed since its last run.
  topology: { cron: CRONS.everyMinute, run: topologyTick },
  team: { cron: CRONS.everyMinute, run: teamTick },
});

export function ticksFor(cron: string): [TickName, Tick][] {
  return [...TICKS].filter(([, tick]) => tick.cron === cron);
}
