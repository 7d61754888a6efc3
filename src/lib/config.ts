import { eq } from "drizzle-orm";
import type { z, ZodObject } from "zod";
import type { Db } from "../db/client";
import { settings } from "../db/schema";
import type { Env } from "../env";
import { AppError, fieldErrorsFromIssues, type FieldError } from "./errors";
import { appendEvent } from "./events";

/**
 * A feature's config section: a zod object whose every field has a default, so an empty store
 * yields a working configuration and GET always returns the effective section. (A key left without
 * a default on purpose, so "unset" stays visible, is resolved by its feature and shown by `present`.)
 */
export interface ConfigSection<S extends ZodObject = ZodObject> {
  name: string;
  schema: S;
  /**
   * How GET/PUT show the stored value, when that is not the value itself: a section that must keep
   * "unset" apart from a default (`team`) stores what was written and shows the effective values.
   */
  view?: (value: z.infer<S>) => Record<string, unknown>;
  /**
   * Like `view`, for a section whose effective values depend on other state (another section, what
   * live runners offer): `council` shows which stages `model_work` turns on.
   */
  present?: (db: Db, value: z.infer<S>, now: Date) => Promise<Record<string, unknown>>;
  /**
   * A precondition on what other state a valid value needs, checked before the write (it throws an
   * `AppError` and nothing is written): `topology_evolution` is not switched on while no human
   * could approve what it proposes. `old` is the value in force.
   */
  admit?: (ctx: { env: Env; db: Db; now: Date }, value: z.infer<S>, old: z.infer<S>) => Promise<void>;
}

export function defineConfigSection<S extends ZodObject>(
  name: string,
  schema: S,
  options: {
    view?: (value: z.infer<S>) => Record<string, unknown>;
    present?: (db: Db, value: z.infer<S>, now: Date) => Promise<Record<string, unknown>>;
    admit?: (ctx: { env: Env; db: Db; now: Date }, value: z.infer<S>, old: z.infer<S>) => Promise<void>;
  } = {},
): ConfigSection<S> {
  return { name, schema, ...options };
}

/** The section as clients see it (its `view`, or the value). */
export function presentSection<S extends ZodObject>(section: ConfigSection<S>, value: z.infer<S>): Record<string, unknown> {
  return section.view ? section.view(value) : (value as Record<string, unknown>);
}

/** The section as clients see it, reading what its `present` needs. */
export async function presentSectionAt<S extends ZodObject>(
  db: Db,
  section: ConfigSection<S>,
  value: z.infer<S>,
  now: Date,
): Promise<Record<string, unknown>> {
  return section.present ? section.present(db, value, now) : presentSection(section, value);
}

/** The stored value re-parsed through the schema; a row that no longer parses falls back to defaults. */
export async function readSection<S extends ZodObject>(db: Db, section: ConfigSection<S>): Promise<z.infer<S>> {
  return sectionValue(section, (await sectionRow(db, section))[0]);
}

/** The section's stored row (zero or one) as an un-executed query, so a caller can read it inside its own `db.batch`. */
export function sectionRow<S extends ZodObject>(db: Db, section: ConfigSection<S>) {
  return db.select({ value: settings.value }).from(settings).where(eq(settings.section, section.name)).limit(1);
}

/** What `readSection` makes of a stored row (or of none): the value parsed, else the defaults. */
export function sectionValue<S extends ZodObject>(section: ConfigSection<S>, row: { value: unknown } | undefined): z.infer<S> {
  const parsed = section.schema.safeParse(row?.value ?? {});
  return (parsed.success ? parsed.data : section.schema.parse({})) as z.infer<S>;
}

/**
 * How long this isolate keeps a section read through `readSectionCached`: a change made through
 * another isolate is seen within this time, one made through this isolate at once.
 */
export const CONFIG_CACHE_MS = 2_000;
const sectionCache = new Map<string, { value: unknown; until: number }>();

/** `readSection` through a short per-isolate cache, for hot paths (every runner lease). */
export async function readSectionCached<S extends ZodObject>(db: Db, section: ConfigSection<S>): Promise<z.infer<S>> {
  const now = Date.now();
  const hit = sectionCache.get(section.name);
  if (hit && hit.until > now) return hit.value as z.infer<S>;
  const value = await readSection(db, section);
  sectionCache.set(section.name, { value, until: now + CONFIG_CACHE_MS });
  return value;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Keys of `input` that `parsed` does not have, at any depth. zod's `.strict()` checks one object
 * level, and a nested `z.object` silently strips what it does not know; comparing the input with
 * what the schema kept finds an unknown key wherever it is. Sound because a config section is
 * plain data (no transforms): what parses is exactly what is stored and read back.
 */
export function unknownKeys(input: unknown, parsed: unknown, path: readonly string[] = []): FieldError[] {
  if (Array.isArray(input) && Array.isArray(parsed)) {
    return input.flatMap((item, i) => unknownKeys(item, parsed[i], [...path, String(i)]));
  }
  if (!isPlainObject(input) || !isPlainObject(parsed)) return [];
  return Object.keys(input).flatMap((key) =>
    Object.hasOwn(parsed, key)
      ? unknownKeys(input[key], parsed[key], [...path, key])
      : [{ path: [...path, key].join("."), message: `Unrecognized key: "${key}"` }],
  );
}

/**
 * Validates the whole section, refusing unknown keys at every depth; on failure nothing is stored.
 * The write and its event are one batch.
 */
export async function writeSection<S extends ZodObject>(
  db: Db,
  section: ConfigSection<S>,
  input: unknown,
  actor: string,
  now: Date,
  env?: Env,
): Promise<z.infer<S>> {
  const parsed = section.schema.strict().safeParse(input);
  const errors = parsed.success ? unknownKeys(input, parsed.data) : fieldErrorsFromIssues(parsed.error.issues);
  if (!parsed.success || errors.length > 0) {
    throw new AppError("validation_failed", `config section '${section.name}' is invalid`, { errors });
  }
  if (section.admit) {
    // A section with a precondition cannot be written by a caller that cannot check it.
    if (!env) throw new Error(`config section '${section.name}' needs the Worker's env to be written`);
    await section.admit({ env, db, now }, parsed.data as z.infer<S>, await readSection(db, section));
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
  sectionCache.set(section.name, { value: parsed.data, until: Date.now() + CONFIG_CACHE_MS });
  return parsed.data as z.infer<S>;
}
