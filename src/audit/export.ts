import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { PUBLIC_EVENT_PREFIXES } from "../lib/events";
import type { ArchiveReader } from "../events/retention";
import { EXPORT_FORMAT, parsePayload, type ChainEvent } from "./chain";
import { lastCheckpoint } from "./checkpoint";
import { publishedKeys } from "./keys";
import { loadHead } from "./seal";

/**
 * The audit export (issue 24): NDJSON, one object a line, each with a `kind`:
 *
 *   header      {kind, format, scope, from_seq, to_seq, head_seq, last_checkpoint_seq, exported_at, keys, public_types?}
 *   event       {kind, seq, prev_hash, hash, id, type, subject, payload, created_at, ref?}
 *   redacted    {kind, seq, prev_hash, hash}          (public scope: an event that is not public)
 *   checkpoint  {kind, seq, hash, at, kid, sig}       (right after the entry it signs)
 *   end         {kind, events, redacted, checkpoints, last_seq, next_from_seq}
 *
 * Entries come in seq order, read page by page (one D1 query each), so memory stays one page
 * whatever the range. One response carries at most `maxEvents` entries; `next_from_seq` says where
 * the next one starts (append it to the same file: the verifier takes consecutive segments).
 */
export type ExportScope = "admin" | "public";

/** Whether anyone may read the event (`GET /v1/public/events/stream`'s rule, applied to one type). */
export function isPublicType(type: string): boolean {
  return PUBLIC_EVENT_PREFIXES.some((p) => type.startsWith(p));
}

export interface ExportRequest {
  scope: ExportScope;
  fromSeq?: number;
  /** Default: the last checkpoint (everything the server has signed), else the head. */
  toSeq?: number;
  now: Date;
  pageSize?: number;
  maxEvents?: number;
  /** Where events past the retention window went (issue 26): their chain entries export with them. */
  archive?: ArchiveReader;
}

export const EXPORT_PAGE = 1_000;
/** Entries per response: 500 pages of D1 reads, well inside a Worker invocation's 1,000 queries. */
export const EXPORT_MAX_EVENTS = 500_000;

export interface ExportPlan {
  fromSeq: number;
  toSeq: number;
  nextFromSeq: number | null;
  stream: ReadableStream<Uint8Array>;
}

interface Row {
  k: 0 | 1;
  seq: number;
  event_id: number | null;
  prev_hash: string | null;
  hash: string;
  ref: string | null;
  id: number | null;
  type: string | null;
  subject: string | null;
  payload: string | null;
  created_at: string | null;
  at: string | null;
  kid: string | null;
  sig: string | null;
}

export async function openExport(db: Db, req: ExportRequest): Promise<ExportPlan> {
  const pageSize = req.pageSize ?? EXPORT_PAGE;
  const maxEvents = req.maxEvents ?? EXPORT_MAX_EVENTS;
  const [head, last, keys] = await Promise.all([loadHead(db), lastCheckpoint(db), publishedKeys(db)]);
  const fromSeq = req.fromSeq ?? 1;
  const wanted = Math.min(req.toSeq ?? last?.seq ?? head.seq, head.seq);
  const toSeq = Math.min(wanted, fromSeq + maxEvents - 1);
  const nextFromSeq = toSeq < wanted ? toSeq + 1 : null;
  const encoder = new TextEncoder();
  const line = (o: unknown) => `${JSON.stringify(o)}\n`;
  const header = line({
    kind: "header",
    format: EXPORT_FORMAT,
    scope: req.scope,
    from_seq: fromSeq,
    to_seq: toSeq,
    head_seq: head.seq,
    last_checkpoint_seq: last?.seq ?? null,
    exported_at: req.now.toISOString(),
    keys,
    ...(req.scope === "public" ? { public_types: PUBLIC_EVENT_PREFIXES } : {}),
  });
  const counts = { events: 0, redacted: 0, checkpoints: 0, last_seq: null as number | null };
  let next = fromSeq;
  let started = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(encoder.encode(header));
        return;
      }
      if (next > toSeq) {
        controller.enqueue(encoder.encode(line({ kind: "end", ...counts, next_from_seq: nextFromSeq })));
        controller.close();
        return;
      }
      const upTo = Math.min(toSeq, next + pageSize - 1);
      const rows = await page(db, next, upTo);
      next = upTo + 1;
      // Entries whose event left D1 for the archive (src/events/retention.ts): the event comes from there.
      const gone = rows.filter((r) => r.k === 0 && r.id === null).map((r) => r.event_id!);
      const archived = gone.length > 0 && req.archive ? await req.archive.events(gone) : new Map<number, ChainEvent>();
      let chunk = "";
      for (const r of rows) {
        if (r.k === 1) {
          counts.checkpoints++;
          chunk += line({ kind: "checkpoint", seq: r.seq, hash: r.hash, at: r.at, kid: r.kid, sig: r.sig });
          continue;
        }
        let event: ChainEvent | undefined;
        if (r.id === null) {
          event = archived.get(r.event_id!);
          // Neither in D1 nor in the archive: left out, and the verifier sees the gap.
          if (!event) continue;
        } else {
          event = { id: r.id, type: r.type!, subject: r.subject, payload: parsePayload(r.payload!), created_at: r.created_at! };
        }
        counts.last_seq = r.seq;
        if (req.scope === "public" && !isPublicType(event.type)) {
          counts.redacted++;
          chunk += line({ kind: "redacted", seq: r.seq, prev_hash: r.prev_hash, hash: r.hash });
          continue;
        }
        counts.events++;
        chunk += line({
          kind: "event",
          seq: r.seq,
          prev_hash: r.prev_hash,
          hash: r.hash,
          id: event.id,
          type: event.type,
          subject: event.subject,
          payload: event.payload,
          created_at: event.created_at,
          ...(r.ref !== null ? { ref: parsePayload(r.ref) } : {}),
        });
      }
      if (chunk) controller.enqueue(encoder.encode(chunk));
    },
  });
  return { fromSeq, toSeq, nextFromSeq, stream };
}

/**
 * Entries and checkpoints of seq from..to, in seq order, a checkpoint after the entry it signs. An
 * entry whose event row left D1 comes with `id` null (the caller looks in the archive).
 */
function page(db: Db, from: number, to: number): Promise<Row[]> {
  return db.all<Row>(sql`
    SELECT 0 AS k, c.seq, c.event_id, c.prev_hash, c.hash, c.ref, e.id, e.type, e.subject, e.payload, e.created_at,
           NULL AS at, NULL AS kid, NULL AS sig
    FROM audit_chain c LEFT JOIN events e ON e.id = c.event_id
    WHERE c.seq BETWEEN ${from} AND ${to}
    UNION ALL
    SELECT 1, seq, NULL, NULL, hash, NULL, NULL, NULL, NULL, NULL, NULL, at, kid, sig
    FROM audit_checkpoints WHERE seq BETWEEN ${from} AND ${to}
    ORDER BY 2, 1`);
}
