import * as z from "zod";
import type { ChainEvent } from "../audit/chain";
import { hex, parsePayload } from "../audit/chain";

/**
 * The event archive's format (issue 26): one R2 object per run of events of one UTC day, gzip of
 * NDJSON, one event a line in id order, `{id, type, subject, payload, created_at}` with the payload
 * parsed (as the audit chain hashes it; a stored payload that does not parse stays the string it
 * was, so its entry still fails to verify instead of being repaired by the archive).
 */
export const ARCHIVE_PREFIX = "events/";

/** `events/<day>/<first id, 16 digits>-<last id>.ndjson.gz`: listing a day lists its runs in order. */
export function archiveKey(day: string, firstId: number, lastId: number): string {
  return `${ARCHIVE_PREFIX}${day}/${String(firstId).padStart(16, "0")}-${String(lastId).padStart(16, "0")}.ndjson.gz`;
}

export interface StoredEvent {
  id: number;
  type: string;
  subject: string | null;
  payload: string;
  created_at: string;
}

const archivedLine = z.object({
  id: z.number().int().min(1),
  type: z.string(),
  subject: z.string().nullable(),
  payload: z.unknown(),
  created_at: z.string(),
});

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function gunzip(bytes: ArrayBuffer): Promise<string> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

/** The object's bytes and their SHA-256. */
export async function encodeArchive(rows: readonly StoredEvent[]): Promise<{ body: Uint8Array; sha256: string }> {
  const text = rows
    .map(
      (r) =>
        `${JSON.stringify({ id: r.id, type: r.type, subject: r.subject, payload: parsePayload(r.payload), created_at: r.created_at })}\n`,
    )
    .join("");
  const body = await gzip(new TextEncoder().encode(text));
  return { body, sha256: hex(await crypto.subtle.digest("SHA-256", body)) };
}

/** The events of one archived object, checked against the digest its archive row recorded. */
export async function decodeArchive(bytes: ArrayBuffer, sha256: string): Promise<ChainEvent[]> {
  const digest = hex(await crypto.subtle.digest("SHA-256", bytes));
  if (digest !== sha256) throw new Error(`event archive: object digest ${digest} is not the recorded ${sha256}`);
  const text = await gunzip(bytes);
  return text
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => archivedLine.parse(JSON.parse(l)) as ChainEvent);
}
