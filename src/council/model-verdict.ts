import type { z, ZodType } from "zod";

/**
 * Reads a model's JSON verdict strictly: the whole answer must be one JSON value (optionally inside
 * a single ```json fence, which models add unasked), and it must match `schema` exactly. Anything
 * else is `unparseable`: callers that guard treat that as a rejection.
 */
export function parseVerdict<S extends ZodType>(text: unknown, schema: S): { ok: true; value: z.infer<S> } | { ok: false; reason: string } {
  if (typeof text !== "string" || text.trim() === "") return { ok: false, reason: "empty_answer" };
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(trimmed);
  let json: unknown;
  try {
    json = JSON.parse(fenced ? fenced[1]! : trimmed);
  } catch {
    return { ok: false, reason: "not_json" };
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, reason: "schema_mismatch" };
}

/**
 * What a finished job's result says about who answered. The runner's built-in offline runtime
 * answers every prompt with labelled text: it is never a verdict or a consensus.
 */
export function answerOf(result: Record<string, unknown> | undefined): { text: string | null; runtime: string | null; offline: boolean } {
  const text = typeof result?.text === "string" ? result.text : null;
  const runtime = typeof result?.runtime === "string" ? result.runtime : null;
  return { text, runtime, offline: runtime === "offline" };
}
