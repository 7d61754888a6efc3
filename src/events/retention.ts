import type { ChainEvent } from "../audit/chain";
import type { Db } from "../db/client";
import type { Env } from "../env";
import { archiveKey, decodeArchive, encodeArchive, type StoredEvent } from "./archive";
import type { EventsConfig } from "./config";

const DAY_MS = 86_400_000;
/** Events read per D1 page while building one archive object. */
const PAGE = 1_000;
/** At most this many events per object (10 pages), so one object stays a few MB of NDJSON at most. */
export const MAX_EVENTS_PER_OBJECT = 10_000;
/** Objects per tick run: 20 × (10 reads + 1 batch) stays far inside a Worker invocation's 1,000 queries. */
const MAX_OBJECTS_PER_RUN = 20;

/** The first instant still kept: midnight UTC `retention_days` before today's midnight. */
export function retentionCutoff(now: Date, retentionDays: number): string {
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  return new Date(today - retentionDays * DAY_MS).toISOString();
}

export interface ArchiveRun {
  day: string;
  events: StoredEvent[];
}

/**
 * Which events go into the next object, pure: from the oldest event on (rows in id order), the
 * longest run that is older than the cutoff, sealed into the audit chain (id ≤ `sealedThrough`: the
 * sealer needs the row to seal it) and of the same UTC day as the first. Null when the oldest event
 * is not due, so archiving always takes a prefix of the ids: every id at or below the archive's last
 * one is in R2, every later one in D1, whatever order the clock gave created_at.
 */
export function nextArchiveRun(
  rows: readonly StoredEvent[],
  cutoff: string,
  sealedThrough: number,
  max = MAX_EVENTS_PER_OBJECT,
): ArchiveRun | null {
  const first = rows[0];
  if (!first || first.created_at >= cutoff || first.id > sealedThrough) return null;
  const day = first.created_at.slice(0, 10);
  const run: StoredEvent[] = [];
  for (const r of rows) {
    if (run.length >= max || r.created_at >= cutoff || r.id > sealedThrough || r.created_at.slice(0, 10) !== day) break;
    run.push(r);
  }
  return { day, events: run };
}

type ArchiveBucket = Pick<R2Bucket, "put" | "get">;

/**
 * The `events` tick: moves events past `[events] retention_days` to R2, oldest first, one object
 * per run of one day. Each object is written before its rows leave D1, and the archive row and the
 * delete are one batch, so a failure between the two leaves the events in D1 and the next run
 * writes the same object again (same key, same bytes). Nothing is archived while audit sealing is
 * off: an unsealed event must stay where the sealer reads it.
 */
export async function archiveEvents(
  env: Pick<Env, "AUDIT_SEALING">,
  db: Db,
  bucket: ArchiveBucket,
  config: EventsConfig,
  now: Date,
): Promise<{ archived: number; objects: number; cutoff: string; reason?: string }> {
  const cutoff = retentionCutoff(now, config.retention_days);
  if (env.AUDIT_SEALING === "off") return { archived: 0, objects: 0, cutoff, reason: "audit_sealing_off" };
  const sealed = await db.$client.prepare(`SELECT COALESCE(MAX(event_id), 0) AS n FROM audit_chain`).first<{ n: number }>();
  const sealedThrough = sealed?.n ?? 0;
  let archived = 0;
  let objects = 0;
  while (objects < MAX_OBJECTS_PER_RUN) {
    const rows: StoredEvent[] = [];
    let after = 0;
    // Pages from the oldest event until the run ends (a younger, unsealed or next-day event) or is full.
    for (;;) {
      const page = await db.$client
        .prepare(`SELECT id, type, subject, payload, created_at FROM events WHERE id > ? ORDER BY id LIMIT ?`)
        .bind(after, PAGE)
        .all<StoredEvent>();
      rows.push(...page.results);
      const last = page.results.at(-1);
      if (page.results.length < PAGE || !last || rows.length >= MAX_EVENTS_PER_OBJECT + 1) break;
      if (last.created_at >= cutoff || last.id > sealedThrough || last.created_at.slice(0, 10) !== rows[0]!.created_at.slice(0, 10)) break;
      after = last.id;
    }
    const run = nextArchiveRun(rows, cutoff, sealedThrough);
    if (!run) break;
    const firstId = run.events[0]!.id;
    const lastId = run.events.at(-1)!.id;
    const key = archiveKey(run.day, firstId, lastId);
    const { body, sha256 } = await encodeArchive(run.events);
    await bucket.put(key, body, {
      httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" },
      customMetadata: { first_id: String(firstId), last_id: String(lastId), events: String(run.events.length), sha256 },
    });
    await db.$client.batch([
      db.$client
        .prepare(
          `INSERT INTO event_archives (key, day, first_id, last_id, events, bytes, sha256, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (key) DO NOTHING`,
        )
        .bind(key, run.day, firstId, lastId, run.events.length, body.byteLength, sha256, now.toISOString()),
      // Every id of the run was read in one ascending scan from the oldest event: no other row lies between.
      db.$client.prepare(`DELETE FROM events WHERE id BETWEEN ? AND ?`).bind(firstId, lastId),
    ]);
    archived += run.events.length;
    objects++;
  }
  return { archived, objects, cutoff };
}

/**
 * Archived events by id, for the audit export: finds each id's object through `event_archives`,
 * reads it once per export (objects are kept for the export's life) and checks its digest; an
 * object that is gone or does not match gives no events.
 */
export function archiveReader(db: Db, bucket: ArchiveBucket) {
  const objects = new Map<string, Promise<Map<number, ChainEvent>>>();
  const load = (key: string, sha256: string) => {
    let loaded = objects.get(key);
    if (!loaded) {
      loaded = (async () => {
        try {
          const object = await bucket.get(key);
          if (!object) throw new Error(`event archive: object ${key} is missing`);
          return new Map((await decodeArchive(await object.arrayBuffer(), sha256)).map((e) => [e.id, e]));
        } catch (err) {
          // A missing or replaced object exports as missing entries: the verifier names the first
          // seq that breaks, where a failed stream would only say that the download broke.
          console.error("event archive: unreadable object", key, err);
          return new Map<number, ChainEvent>();
        }
      })();
      objects.set(key, loaded);
    }
    return loaded;
  };
  return {
    async events(ids: readonly number[]): Promise<Map<number, ChainEvent>> {
      const found = new Map<number, ChainEvent>();
      if (ids.length === 0) return found;
      const min = Math.min(...ids);
      const max = Math.max(...ids);
      const { results } = await db.$client
        .prepare(`SELECT key, sha256, first_id, last_id FROM event_archives WHERE last_id >= ? AND first_id <= ? ORDER BY first_id`)
        .bind(min, max)
        .all<{ key: string; sha256: string; first_id: number; last_id: number }>();
      for (const a of results) {
        const events = await load(a.key, a.sha256);
        for (const id of ids) {
          const e = id >= a.first_id && id <= a.last_id ? events.get(id) : undefined;
          if (e) found.set(id, e);
        }
      }
      return found;
    },
  };
}
export type ArchiveReader = ReturnType<typeof archiveReader>;
