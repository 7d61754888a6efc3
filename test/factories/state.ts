import { env } from "cloudflare:workers";
import { asc, count } from "drizzle-orm";
import { getDb } from "../../src/db/client";
import { clockState, credentials, events, settings } from "../../src/db/schema";

/**
 * What a request could have changed in D1: row counts, every stored config section and the test
 * clock's offset. Two equal snapshots around a refused request prove it changed nothing.
 */
export async function snapshot() {
  const db = getDb(env.DB);
  const [creds] = await db.select({ n: count() }).from(credentials);
  const [evts] = await db.select({ n: count() }).from(events);
  const sections = await db.select().from(settings).orderBy(asc(settings.section));
  const clock = await db.select().from(clockState).get();
  return {
    credentials: creds!.n,
    events: evts!.n,
    settings: sections.map((s) => ({ section: s.section, value: s.value, updatedAt: s.updatedAt })),
    clockOffsetMs: clock?.offsetMs ?? null,
  };
}
