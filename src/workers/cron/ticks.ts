import type { Env } from "../../env";
import { registry } from "../../lib/registry";
import { topologyTick } from "../../topology/driver";
import { approvalsTick } from "./approvals";
import { teamTick } from "../../team/round-handler";
import { projectsTick } from "../../projects/tick";
import { conversationsTick } from "../../conversations/tick";
import { silenceBreakerTick } from "../../evolution/silence";
import { playbookTick } from "../../evolution/aee-settle";
import { gvuTick } from "../../evolution/gvu-observe";
import { soulGuardTick } from "../../evolution/soul-guard";
import { councilTick } from "./council";
import { leasesTick } from "./leases";
import { CRONS, type CronExpression } from "./schedule";
import { getAuditSealer } from "../../durable-objects/audit-sealer-rpc";
import { eventsRetentionTick } from "../../events/tick";
import { evalTick } from "../../eval/run";
import { routinesTick } from "../../routines/tick";
import { budgetsTick } from "../../spend/tick";

/** Every tick name of the API; features register theirs below as they land. */
export const TICK_NAMES = [
  "council",
  "topology",
  "approvals",
  "leases",
  "evolution",
  "projects",
  "team",
  "conversations",
  "audit",
  "playbook",
  "soul_guard",
  "gvu",
  "events",
  "eval",
  "routines",
  "budgets",
] as const;
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
  projects: { cron: CRONS.everyMinute, run: projectsTick },
  // Conversations quiet for [conversations] idle_minutes close (and their prediction runs).
  conversations: { cron: CRONS.everyMinute, run: (env, now) => conversationsTick(env, now) },
  // The silence breaker (seed 003 §5.2): a warning for an employee whose evolution has been quiet too long.
  evolution: { cron: CRONS.everyMinute, run: (env, now) => silenceBreakerTick(env, now) },
  // AEE (seed 003 §12.5): rounds from emergency requests, resumed rounds, approved commits, settle windows, the sweep.
  playbook: { cron: CRONS.everyMinute, run: (env, now) => playbookTick(env, now) },
  // The soul guard (seed 003 §5.4): every current SOUL re-hashed against its fingerprint; drift is a critical event.
  soul_guard: { cron: CRONS.everyMinute, run: (env, now) => soulGuardTick(env, now) },
  // Legacy GVU (seed 003 §4): rounds from emergency requests, lost job ends, soul_change approvals, observation windows.
  gvu: { cron: CRONS.everyMinute, run: (env, now) => gvuTick(env, now) },
  // Capability measurements (issue 22): team 2×2 arms whose rounds ended get their verifier; refused arms retry.
  eval: { cron: CRONS.everyMinute, run: (env, now) => evalTick(env, now) },
  // Routines (docs/routines.md): each due slot claimed once, then fired, merged into the open goal, or skipped.
  routines: { cron: CRONS.everyMinute, run: (env, now) => routinesTick(env, now) },
  // Budgets (docs/spend.md): crossings a job's check missed, last month's budget pauses resumed, every inbox's holds synced.
  budgets: { cron: CRONS.everyMinute, run: (env, now) => budgetsTick(env, now) },
  // Events past [events] retention_days move to the R2 archive, oldest first (issue 26).
  events: { cron: CRONS.hourly, run: (env, now) => eventsRetentionTick(env, now) },
  // Seals what is unsealed and watches 15 s for the events the other ticks of this minute write (issue 24).
  audit: {
    cron: CRONS.everyMinute,
    run: async (env) =>
      env.AUDIT_SEALING === "off"
        ? { ran: false, reason: "audit_sealing_off" }
        : { ...(await getAuditSealer(env).seal({ windowMs: 15_000 })) },
  },
});

export function ticksFor(cron: string): [TickName, Tick][] {
  return [...TICKS].filter(([, tick]) => ([] as string[]).concat(tick.cron).includes(cron));
}
