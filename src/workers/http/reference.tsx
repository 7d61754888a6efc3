/** @jsxImportSource hono/jsx */
import { Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../app-env";
import { htmlPages } from "../middleware/html-pages";
import { describe } from "../openapi/describe";
import { openApiDocument } from "../openapi/document";
import { API_TAGS } from "../openapi/tags";
import { ReferencePage, type ReferenceTag } from "../../web/pages/reference";
import { page } from "./html";

const METHOD_ORDER = ["get", "post", "put", "patch", "delete"];

type Document = {
  paths: Record<
    string,
    Record<
      string,
      { operationId: string; summary?: string; tags?: string[]; description?: string; security?: unknown[]; "x-crewplane-auth"?: string }
    >
  >;
};

/** The document's operations by tag, in the tags' order, each with the sentence that says who may call it. */
function referenceTags(document: Document): { tags: ReferenceTag[]; count: number } {
  const byTag = new Map<string, ReferenceTag>(API_TAGS.map((t) => [t.name, { ...t, operations: [] }]));
  let count = 0;
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHOD_ORDER) {
      const op = item[method];
      if (!op) continue;
      count++;
      const auth = op["x-crewplane-auth"] ?? "Public: no token needed.";
      byTag.get(op.tags?.[0] ?? "pages")?.operations.push({ id: op.operationId, method, path, summary: op.summary ?? "", auth });
    }
  }
  return { tags: [...byTag.values()].filter((t) => t.operations.length > 0), count };
}

/**
 * The contract, served by the Worker it describes: `/openapi.json` (OpenAPI 3.1, generated from the
 * routes' schemas) and `/docs`, a reference drawn from it. `app` is the root app; the document is
 * generated on first request, when every route is mounted.
 */
export function referenceRoutes(app: Hono<never>) {
  return new Hono<AppEnv>()
    .get(
      "/openapi.json",
      describe({
        summary: "This API's OpenAPI 3.1 document",
        responses: {
          200: { description: "The document", type: "application/json", schema: z.looseObject({ openapi: z.literal("3.1.0") }) },
        },
      }),
      async (c) => {
        const document = await openApiDocument(app);
        return c.json(document, 200, { "Cache-Control": "public, max-age=300" });
      },
    )
    .get(
      "/docs",
      describe({ summary: "The interactive API reference", responses: { 200: { description: "The reference page", type: "text/html" } } }),
      htmlPages(),
      async (c) => {
        const { tags, count } = referenceTags((await openApiDocument(app)) as Document);
        return page(c, <ReferencePage tags={tags} operationCount={count} />);
      },
    );
}
