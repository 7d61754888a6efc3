import { and, asc, desc, eq, gt, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { named, preparedOnce } from "../db/prepared";
import { events } from "../db/schema";

export interface NewEvent {
  type: string;
  subject?: string | null;
  payload?: Record<string, unknown>;
  /** Makes the append idempotent for producers that may deliver twice. */
  dedupeKey?: string;
}

/**
 * Returns the insert un-executed so callers put it in the same `db.batch([...])` as the state
 * change it records: the change and its trail land together or not at all.
 */
export function appendEvent(db: Db, event: NewEvent, at: Date) {
  return db
    .insert(events)
    .values({
      type: event.type,
      subject: event.subject ?? null,
      payload: event.payload ?? {},
      createdAt: at.toISOString(),
      dedupeKey: event.dedupeKey ?? null,
    })
    .onConflictDoNothing({ target: events.dedupeKey });
}

/**
 * `appendEvent`'s row as a statement built once (`preparedOnce`), for hot paths that bind it straight
 * to D1. Values: `type`, `subject`, `payload` (JSON text), `created_at`, `dedupe_key`.
 */
export const appendEventPrepared = preparedOnce((db) =>
  db
    .insert(events)
    .values({
      type: named("type"),
      subject: named("subject"),
      payload: sql`${named("payload")}`,
      createdAt: named("created_at"),
      dedupeKey: named("dedupe_key"),
    })
    .onConflictDoNothing({ target: events.dedupeKey }),
);

export interface EventQuery {
  typePrefix?: string;
  subject?: string;
  after?: number;
  limit: number;
  /** Only the public event types (`PUBLIC_EVENT_PREFIXES`): the feed anyone may read. */
  publicOnly?: boolean;
}

/**
 * The event types anyone may read (`GET /v1/public/events/stream`): those of the council, its
 * principles, official projects and swarm tasks, and node registrations, whose subjects the public
 * GET endpoints already show. Approvals, employees, tasks, jobs, topology, teams, config and admin
 * events are operators' business.
 */
export const PUBLIC_EVENT_PREFIXES = ["council.", "governance.", "project.", "swarm_task.", "node.registered"] as const;

const hasPrefix = (prefix: string) => sql`substr(${events.type}, 1, ${prefix.length}) = ${prefix}`;

export interface EventView {
  id: string;
  type: string;
  subject: string | null;
  payload: Record<string, unknown>;
  created_at: string;
}

/** Oldest first, so a consumer can tail the feed by passing back `next_cursor`. */
export async function listEvents(db: Db, q: EventQuery): Promise<{ events: EventView[]; next_cursor: string | null }> {
  const conditions = [];
  if (q.typePrefix) conditions.push(hasPrefix(q.typePrefix));
  if (q.publicOnly) conditions.push(or(...PUBLIC_EVENT_PREFIXES.map(hasPrefix)));
  if (q.subject) conditions.push(eq(events.subject, q.subject));
  if (q.after !== undefined) conditions.push(gt(events.id, q.after));
  const rows = await db
    .select()
    .from(events)
    .where(and(...conditions))
    .orderBy(asc(events.id))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  return {
    events: page.map((r) => ({
      id: String(r.id),
      type: r.type,
      subject: r.subject,
      payload: r.payload,
      created_at: r.createdAt,
    })),
    next_cursor: hasMore ? String(page[page.length - 1]!.id) : null,
  };
}

/** The newest event's id (0 for an empty feed): where a live stream without a cursor starts. */
export async function newestEventId(db: Db): Promise<number> {
  const row = await db.select({ id: events.id }).from(events).orderBy(desc(events.id)).limit(1).get();
  return row?.id ?? 0;
}
