import type { MiddlewareHandler } from "hono";
import { AppError } from "../../lib/errors";

/** The one request body limit (README "Limits"): 1 MiB of bytes on the wire, for every endpoint. */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

function tooLarge(maxBytes: number) {
  return new AppError("payload_too_large", `The request body exceeds the limit of ${maxBytes} bytes (1 MiB)`, {
    extra: { limit_bytes: maxBytes },
  });
}

/**
 * Refuses a body over `maxBytes` before any handler parses it. A declared Content-Length over the
 * limit is refused without reading; otherwise the body is read chunk by chunk, counting bytes (a
 * chunked or streamed body has no length to trust, and characters are not bytes), and abandoned the
 * moment it passes the limit. What was read is handed on, buffered, at most `maxBytes`.
 *
 * Hono's own bodyLimit trusts Content-Length whenever it is present; this one counts regardless.
 */
export function bodyLimit(maxBytes = MAX_REQUEST_BODY_BYTES): MiddlewareHandler {
  return async function bodyLimit(c, next) {
    const body = c.req.raw.body;
    if (!body) return next();
    const declared = c.req.header("content-length")?.trim();
    if (declared && /^\d+$/.test(declared) && Number(declared) > maxBytes) throw tooLarge(maxBytes);

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
    // Handed on through Hono's body cache, which every body reader here goes through (`c.req.json()`,
    // `text()`, `parseBody()`, the validators): cheaper on the hot paths than a second Request around
    // the bytes and a second stream read. The text is decoded as `Body.text()` does (UTF-8, a leading
    // BOM dropped, bad bytes replaced), and the bytes stay available for anything that wants them.
    // (Hono types the cache by value; it stores the promises its readers return.)
    const cache = c.req.bodyCache as Record<string, Promise<unknown>>;
    cache.arrayBuffer = Promise.resolve(buffered.buffer);
    cache.text = Promise.resolve(new TextDecoder().decode(buffered));
    await next();
  };
}
