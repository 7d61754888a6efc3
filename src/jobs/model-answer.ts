import type { z, ZodType } from "zod";

/**
 * Reads a model's answer as one JSON value: the whole text (optionally inside a single ```json fence,
 * which models add unasked), nothing around it. Strict on purpose: scanning free text for JSON would
 * let an echo of the prompt count as an answer.
 */
export function readJsonAnswer(text: unknown): { ok: true; json: unknown } | { ok: false; reason: "empty_answer" | "not_json" } {
  if (typeof text !== "string" || text.trim() === "") return { ok: false, reason: "empty_answer" };
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(trimmed);
  try {
    return { ok: true, json: JSON.parse(fenced ? fenced[1]! : trimmed) };
  } catch {
    return { ok: false, reason: "not_json" };
  }
}

/**
 * Reads a model's JSON verdict strictly (`readJsonAnswer`), and it must match `schema` exactly.
 * Anything else is unparseable: callers that guard treat that as a rejection.
 */
export function parseVerdict<S extends ZodType>(text: unknown, schema: S): { ok: true; value: z.infer<S> } | { ok: false; reason: string } {
  const answer = readJsonAnswer(text);
  if (!answer.ok) return answer;
  const parsed = schema.safeParse(answer.json);
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
