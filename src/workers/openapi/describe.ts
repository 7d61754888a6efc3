import type { MiddlewareHandler } from "hono";
import { uniqueSymbol } from "hono-openapi";
import type { ZodType } from "zod";
import type { ErrorCode } from "../../lib/errors";
import { jsonSchemaOf } from "./json-schema";

/**
 * Operation metadata for the OpenAPI document (src/workers/openapi/document.ts). hono-openapi reads
 * it from the route's handlers under its symbol and merges what every middleware of the route says:
 * `requireAuth` adds the security and its 401/403, `validate` the parameters or body and its 422,
 * `describe` the summary and the success responses. The spec is built lazily, on the first request
 * for the document, so a cold start pays nothing for it.
 */
export type OperationSpec = Record<string, unknown> & {
  /** The error codes an operation can answer with; arrays concatenate when specs merge. */
  "x-crewplane-errors"?: ErrorCode[];
};

export function withOperationSpec<M extends MiddlewareHandler>(middleware: M, build: () => OperationSpec): M {
  let spec: OperationSpec | undefined;
  return Object.assign(middleware, {
    [uniqueSymbol]: {
      get spec() {
        spec ??= build();
        return spec;
      },
    },
  });
}

/** A success response: a JSON body's zod schema, or another media type (HTML, SSE, NDJSON, a file). */
export type ResponseDoc = ZodType | { description: string; schema?: ZodType; type?: string };

export interface RouteDoc {
  summary: string;
  description?: string;
  /** Tags beyond the one its path gives (src/workers/openapi/tags.ts). */
  tags?: string[];
  /** Success (and other non-error) responses by status. */
  responses: Record<number, ResponseDoc>;
  /** The error codes the handler itself can answer with (auth and validation add their own). */
  errors?: ErrorCode[];
  /** A JSON body the handler parses itself (a route with `validate("json", …)` gets it from there). */
  body?: ZodType;
  deprecated?: boolean;
}

const STATUS_TEXT: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No content",
  302: "Found (a redirect)",
  303: "See other (a redirect)",
  304: "Not modified",
};

function responseObject(status: number, doc: ResponseDoc): Record<string, unknown> {
  if ("_zod" in doc) {
    return {
      description: STATUS_TEXT[status] ?? String(status),
      content: { "application/json": { schema: jsonSchemaOf(doc as ZodType, "output") } },
    };
  }
  const { description, schema, type } = doc as { description: string; schema?: ZodType; type?: string };
  if (!type && !schema) return { description };
  return { description, content: { [type ?? "application/json"]: schema ? { schema: jsonSchemaOf(schema, "output") } : {} } };
}

/**
 * The route's own documentation: a middleware that does nothing at request time. It hands the
 * request straight on (no async frame of its own), since it sits on every route, hot paths included.
 */
export function describe(doc: RouteDoc): MiddlewareHandler {
  const passThrough: MiddlewareHandler = (_c, next) => next();
  return withOperationSpec(passThrough, () => ({
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    ...(doc.tags ? { tags: doc.tags } : {}),
    ...(doc.deprecated ? { deprecated: true } : {}),
    ...(doc.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(doc.body, "input") } } } } : {}),
    responses: Object.fromEntries(Object.entries(doc.responses).map(([status, r]) => [status, responseObject(Number(status), r)])),
    "x-crewplane-errors": doc.errors ?? [],
  }));
}
