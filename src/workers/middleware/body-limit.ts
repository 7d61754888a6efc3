import type { MiddlewareHandler } from "hono";
import { AppError } from "../../lib/errors";

/** The one request body limit (README "Limits"): 1 MiB of bytes on the wire, for every endpoint. */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

function tooLarge(maxBytes: number) {
  return new AppError("payload_too_large", `The request body exceeds the limit of ${maxBytes} bytes (1 MiB)`, {
    extra: { limit_bytes: maxBytes },
  });
}

/** Decoding is stateless without `stream: true`, so one decoder serves every request of the isolate. */
const utf8 = new TextDecoder();
const encoder = new TextEncoder();
/** Bodies read as text (JSON, text, urlencoded forms); others keep their bytes exact. */
const TEXT_TYPES = /^\s*(application\/([\w.-]+\+)?json|text\/|application\/x-www-form-urlencoded)/i;

/**
 * Refuses a body over `maxBytes` before any handler parses it. A declared Content-Length over the
 * limit is refused without reading. A body with a declared length within the limit is read in one
 * native call (on the wire, HTTP framing ends it at the declared length) and its size checked after,
 * so an in-process caller's understated Content-Length is still refused. A body without one (chunked
 * or streamed: no length to trust) is read chunk by chunk, counting bytes (characters are not bytes),
 * and abandoned the moment it passes the limit. What was read is handed on, buffered, at most
 * `maxBytes`.
 *
 * Hono's own bodyLimit trusts Content-Length whenever it is present; this one counts regardless.
 */
export function bodyLimit(maxBytes = MAX_REQUEST_BODY_BYTES): MiddlewareHandler {
  return async function bodyLimit(c, next) {
    const declared = c.req.header("content-length")?.trim();
    const length = declared && /^\d+$/.test(declared) ? Number(declared) : null;
    if (length !== null && length > maxBytes) throw tooLarge(maxBytes);

    // The hot paths (small JSON with a length) read the body as text in one native call, as a plain
    // `c.req.json()` would: reading bytes, then decoding them, was twice the cost under heartbeat load
    // (issue 26 item 5). A character is at most three UTF-8 bytes, so most bodies need no encoding to
    // be known within the limit. (Malformed bytes come back as U+FFFD and count three bytes each.)
    const cache = c.req.bodyCache as Record<string, Promise<unknown>>;
    if (length !== null && TEXT_TYPES.test(c.req.header("content-type") ?? "")) {
      const text = await c.req.raw.text();
      if (3 * text.length > maxBytes && encoder.encode(text).byteLength > maxBytes) throw tooLarge(maxBytes);
      cache.text = Promise.resolve(text);
      return next();
    }
    // Anything else keeps its bytes. The chunk loop costs a promise per read and a copy: a body with
    // a length is read in one native call, and `Request.body` (a JS stream around the body) is asked
    // for only when there is no length.
    let buffered: Uint8Array;
    if (length !== null) buffered = new Uint8Array(await c.req.raw.arrayBuffer());
    else {
      const body = c.req.raw.body;
      if (!body) return next();
      buffered = await readCounting(body, maxBytes);
    }
    if (buffered.byteLength > maxBytes) throw tooLarge(maxBytes);
    // Handed on through Hono's body cache, which every body reader here goes through (`c.req.json()`,
    // `text()`, `parseBody()`, the validators): cheaper on the hot paths than a second Request around
    // the bytes and a second stream read. The text is decoded as `Body.text()` does (UTF-8, a leading
    // BOM dropped, bad bytes replaced), and the bytes stay available for anything that wants them.
    // (Hono types the cache by value; it stores the promises its readers return.)
    cache.arrayBuffer = Promise.resolve(buffered.buffer);
    cache.text = Promise.resolve(utf8.decode(buffered));
    await next();
  };
}

/** Reads a stream of unknown length, refusing it as soon as it passes `maxBytes`. */
async function readCounting(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const buffered = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    buffered.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return buffered;
}
