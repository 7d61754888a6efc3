import { Hono } from "hono";
import { createFactory } from "hono/factory";
import * as z from "zod";
import { getDb, type Db } from "../../db/client";
import { requireAuth } from "../middleware/require-auth";
import { notFound } from "../../lib/errors";
import { label } from "../../lib/validation";
import { validate } from "../middleware/validate";
import { assertMayReadKnowledge } from "../../knowledge/access";
import { addMemory, memoryBody, searchMemory } from "../../knowledge/memory";
import { putWikiPage, readWikiPage, searchWiki, wikiBody, wikiSlug } from "../../knowledge/wiki";
import { employeeId, findEmployee } from "../../tasks/employees";
import type { AppEnv } from "../app-env";
import { describe, type RouteDoc } from "../openapi/describe";
import {
  memoryEntrySchema,
  memorySearchSchema,
  wikiPageSchema,
  wikiPutSchema,
  wikiSearchSchema,
} from "../openapi/responses/employees-knowledge";

const idParam = z.object({ id: employeeId });
const pageParam = z.object({ id: employeeId, slug: wikiSlug });
const searchQuery = z.object({
  // A query reaches FTS5 MATCH or a LIKE: a NUL makes MATCH fail, and no control character, bidi
  // override or lone surrogate means anything in a search, so all of them are a 422 naming `q`.
  q: label(500).optional(),
  limit: z.coerce.number().int().min(1).max(50).default(10),
});

async function existing(db: Db, id: string) {
  if (!(await findEmployee(db, id))) throw notFound(`employee ${id}`);
}

const factory = createFactory<AppEnv>();

/** A search over one employee's memory or wiki: its viewers and its own members, best match first. */
function searchRoute(
  key: "entries" | "pages",
  search: (db: Db, id: string, q: string | undefined, limit: number) => Promise<unknown[]>,
  doc: RouteDoc,
) {
  return factory.createHandlers(
    describe(doc),
    requireAuth({ operator: "viewer", member: true }),
    validate("param", idParam),
    validate("query", searchQuery),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      await assertMayReadKnowledge(db, c.var.principal, id);
      await existing(db, id);
      const { q, limit } = c.req.valid("query");
      return c.json({ employee_id: id, ...(q ? { q } : {}), [key]: await search(db, id, q, limit) });
    },
  );
}

/**
 * An employee's memory and wiki (issue 11 item 6), mounted beside the employee registry. Written by
 * operators (manager) and by employees: an employee's own work runs on a runner, so its writes come
 * with the runner's token (recorded as `by`). Role members never write: they are deleted when their
 * round settles, so what they learned would be kept under an id that no longer exists (seed 002);
 * they pass it on in their packets instead. Read by operators (viewer) and the employee's own role
 * members (member token); the crewplane MCP server's `memory_search`, `wiki_search` and `wiki_read`
 * call the GET routes.
 */
const writers = requireAuth({ operator: "manager", runner: true });

export const knowledgeRoutes = new Hono<AppEnv>()
  .post(
    "/:id/memory",
    describe({ summary: "Add a memory entry to the employee", responses: { 201: memoryEntrySchema }, errors: ["not_found"] }),
    writers,
    validate("param", idParam),
    validate("json", memoryBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id } = c.req.valid("param");
      await existing(db, id);
      return c.json(await addMemory(db, id, c.req.valid("json"), c.var.principal.id, c.var.clock.now()), 201);
    },
  )
  .get(
    "/:id/memory",
    ...searchRoute("entries", searchMemory, {
      summary: "Search the employee's memory (newest first without `q`)",
      responses: { 200: memorySearchSchema },
      errors: ["not_found"],
    }),
  )
  .put(
    "/:id/wiki/:slug",
    describe({
      summary: "Create or replace a wiki page of the employee",
      responses: { 200: wikiPutSchema, 201: wikiPutSchema },
      errors: ["not_found"],
    }),
    writers,
    validate("param", pageParam),
    validate("json", wikiBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id, slug } = c.req.valid("param");
      await existing(db, id);
      const { page, created } = await putWikiPage(db, id, slug, c.req.valid("json"), c.var.principal.id, c.var.clock.now());
      return c.json({ ...page, created }, created ? 201 : 200);
    },
  )
  .get(
    "/:id/wiki",
    ...searchRoute("pages", searchWiki, {
      summary: "Search the employee's wiki (all pages by slug without `q`)",
      responses: { 200: wikiSearchSchema },
      errors: ["not_found"],
    }),
  )
  .get(
    "/:id/wiki/:slug",
    describe({ summary: "Read one wiki page of the employee", responses: { 200: wikiPageSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer", member: true }),
    validate("param", pageParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const { id, slug } = c.req.valid("param");
      await assertMayReadKnowledge(db, c.var.principal, id);
      return c.json(await readWikiPage(db, id, slug));
    },
  );
