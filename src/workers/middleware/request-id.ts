import type { MiddlewareHandler } from "hono";

/**
 * A client's X-Request-Id is kept only when it is 1-128 characters of `[A-Za-z0-9._:-]` (UUIDs,
 * W3C trace ids, `svc:trace.span` forms); anything else is replaced by a generated UUID, so a
 * header cannot put spaces, quotes, control or non-ASCII characters, or megabytes, into our logs.
 */
const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Like hono/request-id (same `requestId` variable and header), with our documented bound and charset. */
export function requestId(): MiddlewareHandler {
  return async function requestId(c, next) {
    const given = c.req.header("x-request-id");
    const id = given !== undefined && REQUEST_ID_PATTERN.test(given) ? given : crypto.randomUUID();
    c.set("requestId", id);
    c.header("X-Request-Id", id);
    await next();
  };
}
