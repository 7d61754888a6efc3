import { exports } from "cloudflare:workers";
import { ADMIN_TOKEN } from "./index";
import { expectConforms } from "./contract";

const BASE = "http://crewplane.test";

export interface SendOptions {
  method?: string;
  /** `null` sends no Authorization header; a string is sent as a Bearer token. */
  token?: string | null;
  headers?: Record<string, string>;
  /** Sent as given: no content type is added, so a test controls exactly what the Worker sees. */
  body?: BodyInit;
}

export interface Sent {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or null when it is empty or not JSON. */
  json: any;
}

/** A request with full control over headers and body (content type, streams, raw bytes). */
export async function send(path: string, opts: SendOptions = {}): Promise<Sent> {
  const headers = new Headers(opts.headers);
  const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  const res = await exports.default.fetch(`${BASE}${path}`, {
    method: opts.method ?? (opts.body === undefined ? "GET" : "POST"),
    headers,
    body: opts.body,
  });
  const text = await res.text();
  await expectConforms(opts.method ?? (opts.body === undefined ? "GET" : "POST"), `${BASE}${path}`, { status: res.status, headers: res.headers, text });
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** JSON text as UTF-8 bytes: a body for which fetch adds no Content-Type of its own. */
export const utf8 = (text: string) => new TextEncoder().encode(text);

/** A body delivered in chunks with no Content-Length, the way a chunked upload arrives. */
export function streamed(text: string, chunkBytes = 64 * 1024): ReadableStream<Uint8Array> {
  const bytes = utf8(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunkBytes));
      offset += chunkBytes;
    },
  });
}
