import type { Context } from "hono";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import * as z from "zod";
import { getDb } from "../../db/client";
import { listEvents, newestEventId } from "../../lib/events";
import { AppError } from "../../lib/errors";
import type { AppEnv } from "../app-env";
import { problemResponse } from "../problem";
import { acquireStreamSlot, STREAM_RETRY_AFTER_S, streamClientKey } from "./stream-slots";

/** How often a stream looks for new events, and how often an idle one says it is alive. */
export const STREAM_POLL_MS = 1_000;
const KEEPALIVE_MS = 15_000;
/**
 * A stream ends after this long; EventSource reconnects with `Last-Event-ID` (after `retry` ms) and
 * resumes where it stopped, so nothing is missed and no connection polls D1 for ever.
 */
export const STREAM_MAX_MS = 10 * 60_000;
const RETRY_MS = 2_000;
const PAGE = 100;

/** The filters of `GET /v1/events` (its router validates them); `cursor` resumes after that event id. */
export interface StreamQuery {
  type?: string | undefined;
  subject?: string | undefined;
  cursor?: string | undefined;
}

// At most 15 digits: every id below 10^15 is a safe integer, so `Number(id)` is exact.
const eventId = z.string().regex(/^\d{1,15}$/);

/**
 * `GET /v1/events/stream` and `GET /v1/public/events/stream`: Server-Sent Events, one `event:` per
 * event (its type), `id:` = the event id, `data:` = the event as `GET /v1/events` shows it. It starts
 * after `Last-Event-ID` (a reconnecting EventSource sends it), else after `cursor`, else at the newest
 * event (only what happens from now on). Backlog is sent in pages, then new events as they land.
 *
 * Both resume points are event ids (1-15 digits, else `422` naming the one that is not). One past the
 * newest event starts at the newest: ids only grow (AUTOINCREMENT), so nothing after it is skipped,
 * and the stream is never silent for ever waiting for an id that will not come for years.
 */
export async function eventStream(c: Context<AppEnv>, query: StreamQuery, publicOnly: boolean): Promise<Response> {
  const resumeHeader = c.req.header("last-event-id");
  if (resumeHeader !== undefined && !eventId.safeParse(resumeHeader).success) {
    throw new AppError("validation_failed", "Last-Event-ID must be an event id", {
      errors: [{ path: "Last-Event-ID", message: "must be an event id from this stream" }],
    });
  }
  if (query.cursor !== undefined && !eventId.safeParse(query.cursor).success) {
    throw new AppError("validation_failed", "cursor must be an event id", {
      errors: [{ path: "cursor", message: "must be an event id from this stream (1-15 digits)" }],
    });
  }
  const db = getDb(c.env.DB);
  const from = resumeHeader ?? query.cursor;
  // One of the client's stream slots (README "Limits and refusals"), given back the moment the
  // client goes away (the response body is cancelled) or the stream ends.
  let slot;
  try {
    slot = await acquireStreamSlot(c.env, streamClientKey(c, c.get("principal")?.id), STREAM_MAX_MS);
  } catch (err) {
    if (err instanceof AppError && err.code === "too_many_streams") {
      return problemResponse(c, err, { "Retry-After": String(STREAM_RETRY_AFTER_S) });
    }
    throw err;
  }
  const held = slot;
  // The release must run even when the runtime stops this request's own work after a disconnect.
  let freed!: () => void;
  const ended = new Promise<void>((resolve) => (freed = resolve));
  try {
    c.executionCtx.waitUntil(ended.then(() => held.release()));
  } catch {
    // No execution context (a direct app.fetch in a test): the release below still runs.
  }
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => {
      freed();
      void held.release();
    });
    try {
      await streamEvents(stream, db, query, publicOnly, from);
    } finally {
      freed();
      await held.release();
    }
  });
}

async function streamEvents(
  stream: SSEStreamingApi,
  db: ReturnType<typeof getDb>,
  query: StreamQuery,
  publicOnly: boolean,
  from: string | undefined,
): Promise<void> {
  const newest = await newestEventId(db);
  let after = from !== undefined ? Math.min(Number(from), newest) : newest;
  const endAt = Date.now() + STREAM_MAX_MS;
  let quietSince = Date.now();
  await stream.writeSSE({ event: "ready", data: JSON.stringify({ after: String(after) }), retry: RETRY_MS });
  while (!stream.aborted && Date.now() < endAt) {
    const page = await listEvents(db, { typePrefix: query.type, subject: query.subject, after, limit: PAGE, publicOnly });
    for (const e of page.events) {
      await stream.writeSSE({ id: e.id, event: e.type, data: JSON.stringify(e) });
      after = Number(e.id);
    }
    if (page.events.length > 0) quietSince = Date.now();
    if (page.next_cursor !== null) continue; // more backlog: no wait
    if (Date.now() - quietSince >= KEEPALIVE_MS) {
      // A comment line: proxies keep the connection, clients ignore it.
      await stream.write(": keepalive\n\n");
      quietSince = Date.now();
    } else if (page.events.length === 0) {
      // An empty comment each quiet second: the runtime notices a client that went away only when
      // a write fails, so this is how a closed page's stream (and its slot) is freed within seconds.
      await stream.write(":\n\n");
    }
    await stream.sleep(STREAM_POLL_MS);
  }
}
