/**
 * JSON Schemas a utility job's answer can be held to (`payload.output_schema`). Only codex enforces
 * one (`--output-schema`); the other CLIs ignore the file and follow the format the prompt states.
 * The Worker parses the answer either way, so a schema only makes a well-formed answer likelier.
 * Codex sends the schema as a strict structured output: every property required, no extra ones, and
 * no keywords strict mode refuses (the criterion number's range is therefore only described).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { VERDICT_SCHEMA } from "../members/verdict.ts";

/** The evaluator's answer: one entry per frozen acceptance criterion. */
export const ACCEPTANCE_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["criteria"],
  properties: {
    criteria: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["id", "met", "reason"],
        properties: {
          id: { type: "integer", description: "The criterion's number as listed, counting from 1." },
          met: { type: "boolean" },
          reason: { type: "string" },
        },
      },
    },
  },
} as const;

export const OUTPUT_SCHEMA_NAMES = ["verdict", "acceptance"] as const;
export type OutputSchemaName = (typeof OUTPUT_SCHEMA_NAMES)[number];
export const OUTPUT_SCHEMAS = { verdict: VERDICT_SCHEMA, acceptance: ACCEPTANCE_SCHEMA } as const satisfies Record<
  OutputSchemaName,
  object
>;

/** Writes the schema into `dir` (the job's work dir, 0600) and returns its path for `outputSchemaPath`. */
export async function writeOutputSchema(dir: string, name: OutputSchemaName): Promise<string> {
  const path = join(dir, `${name}.schema.json`);
  await writeFile(path, `${JSON.stringify(OUTPUT_SCHEMAS[name], null, 2)}\n`, { mode: 0o600 });
  return path;
}
