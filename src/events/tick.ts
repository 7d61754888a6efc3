import { getDb } from "../db/client";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { eventsConfig } from "./config";
import { archiveEvents } from "./retention";

/** The hourly `events` tick: archive what `[events] retention_days` no longer keeps in D1. */
export async function eventsRetentionTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  return { ...(await archiveEvents(env, db, env.EVENT_ARCHIVE, await readSection(db, eventsConfig), now)) };
}
