import * as z from "zod";
import type { ZodType } from "zod";

export type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as the JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) of what a client sends
 * (`input`: defaults optional, coercions as their input) or receives (`output`). Parts JSON Schema
 * cannot say (a transform's result, a refinement) become `{}`: allowed, not invented.
 */
export function jsonSchemaOf(schema: ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any", reused: "inline" }) as JsonSchema;
  return rest;
}
