import { councilSessionsTick, councilTermsTick } from "../../council/tick";
import type { Env } from "../../env";
import { CRONS, type CronExpression } from "./schedule";

/** Hourly: the term check. Every minute: due sessions and stale prescreens. By hand: both. */
export async function councilTick(env: Env, now: Date, cron?: CronExpression) {
  const out: Record<string, unknown> = {};
  if (cron === undefined || cron === CRONS.hourly) out.terms = await councilTermsTick(env, now);
  if (cron === undefined || cron === CRONS.everyMinute) out.sessions = await councilSessionsTick(env, now);
  return out;
}
