import { eq } from "drizzle-orm";
import type { z, ZodObject } from "zod";
import type { Db } from "../db/client";
import { settings } from "../db/schema";
import { AppError, fieldErrorsFromIssues } from "./errors";
import { appendEvent } from "./events";

/**
 * A feature's config section: a zod object whose every field has a default, so an empty store
 * yields a working configuration and GET always returns the effective section.
 */
export interface ConfigSection<S extends ZodObject = ZodObject> {
  name: string;
  schema: S;
  /**
   * How GET/PUT show the stored value, when that is not the value itself: a section that must keep
   * "unset" apart from a default (`team`) stores what was written and shows the effective values.
   */
  view?: (value: z.infer<S>) => Record<string, unknown>;
}

export function defineConfigSection<S extends ZodObject>(
  name: string,
  schema: S,
  options: { view?: (value: z.infer<S>) => Record<string, unknown> } = {},
): ConfigSection<S> {
  return { name, schema, ...options };
}

/** The section as clients see it (its `view`, or the value). */
export function presentSection<S extends ZodObject>(section: ConfigSection<S>, value: z.infer<S>): Record<string, unknown> {
  return section.view ? section.view(value) : (value as Record<string, unknown>);
}

/** The stored value re-parsed through the schema; a row that no longer parses falls back to defaults. */
export async function readSection<S extends ZodObject>(db: Db, section: ConfigSection<S>): Promise<z.infer<S>> {
  const row = await db.select().from(settings).where(eq(settings.section, section.name)).get();
  const parsed = section.schema.safeParse(row?.value ?? {});
  return (parsed.success ? parsed.data : section.schema.parse({})) as z.infer<S>;
}

/** Validates the whole section; on failure nothing is stored. The write and its event are one batch. */
export async function writeSection<S extends ZodObject>(
  db: Db,
  section: ConfigSection<S>,
  input: unknown,
  actor: string,
  now: Date,
): Promise<z.infer<S>> {
  const parsed = section.schema.strict().safeParse(input);
  if (!parsed.success) {
    throw new AppError("validation_failed", `config section '${section.name}' is invalid`, {
      errors: fieldErrorsFromIssues(parsed.error.issues),
    });
  }
  const value = parsed.data as Record<string, unknown>;
  const at = now.toISOString();
  await db.batch([
    db
      .insert(settings)
      .values({ section: section.name, value, updatedAt: at, updatedBy: actor })
      .onConflictDoUpdate({ target: settings.section, set: { value, updatedAt: at, updatedBy: actor } }),
    appendEvent(
      db,
      { type: "config.updated", subject: `config:${section.name}`, payload: { section: section.name, value, by: actor } },
      now,
    ),
  ]);
  return parsed.data as z.infer<S>;
}
