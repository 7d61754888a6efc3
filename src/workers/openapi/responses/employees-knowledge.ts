import * as z from "zod";
import type { memoryView } from "../../../knowledge/memory";
import type { searchWiki, wikiView } from "../../../knowledge/wiki";
import { timestamp } from "./common";

/** One memory entry (src/knowledge/memory.ts); a search hit carries the matching `snippet`. */
export const memoryEntrySchema = z.object({
  memory_id: z.string(),
  employee_id: z.string(),
  text: z.string(),
  tags: z.array(z.string()),
  created_by: z.string(),
  created_at: timestamp,
  importance: z.number().optional(),
  snippet: z.string().optional(),
}) satisfies z.ZodType<ReturnType<typeof memoryView>>;

/** `GET /v1/employees/:id/memory`: best matches first (newest first without `q`). */
export const memorySearchSchema = z.object({
  employee_id: z.string(),
  q: z.string().optional(),
  entries: z.array(memoryEntrySchema),
});

export const wikiPageSchema = z.object({
  employee_id: z.string(),
  slug: z.string(),
  title: z.string(),
  body: z.string(),
  revision: z.number().int(),
  created_at: timestamp,
  updated_by: z.string(),
  updated_at: timestamp,
}) satisfies z.ZodType<ReturnType<typeof wikiView>>;

/** `PUT /v1/employees/:id/wiki/:slug`: the page as stored, and whether this PUT created it. */
export const wikiPutSchema = wikiPageSchema.extend({ created: z.boolean() });

/** `GET /v1/employees/:id/wiki`: matching pages with a snippet (all pages by slug without `q`). */
export const wikiSearchSchema = z.object({
  employee_id: z.string(),
  q: z.string().optional(),
  pages: z.array(
    z.object({ slug: z.string(), title: z.string(), snippet: z.string(), updated_at: timestamp }) satisfies z.ZodType<
      Awaited<ReturnType<typeof searchWiki>>[number]
    >,
  ),
});
