import fc from "fast-check";

export type Schema = Record<string, any>;

/**
 * Long-poll waits would make each generated case wait up to 25 s for nothing: the fuzz keeps them
 * at 0 (their bounds are still exercised by the invalid cases).
 */
const PINNED: Record<string, unknown> = { wait_ms: 0 };

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 24, Math.max(minLength, 24));
  if (schema.format === "date-time")
    return fc.date({ min: new Date("2020-01-01"), max: new Date("2030-01-01"), noInvalidDate: true }).map((d) => d.toISOString());
  if (typeof schema.pattern === "string") {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter((s) => s.length >= minLength && s.length <= (schema.maxLength ?? Infinity))
      .map((s) => s);
  }
  return fc.string({ minLength, maxLength, unit: "grapheme-ascii" });
}

function numberOf(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + (integer ? 1 : 1e-6) : -1_000);
  const max = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - (integer ? 1 : 1e-6) : 1_000_000);
  return integer
    ? fc.integer({ min: Math.ceil(min), max: Math.floor(Math.min(max, Number.MAX_SAFE_INTEGER)) })
    : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/** Values that satisfy a JSON Schema (the subset zod's converter writes), for valid requests. */
export function valid(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 5) return fc.constant("x");
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return fc.oneof(...options.map((o: Schema) => valid(o, depth + 1)));
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return valid(schema.allOf[0], depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string":
      return stringOf(schema);
    case "integer":
      return numberOf(schema, true);
    case "number":
      return numberOf(schema, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const minLength = schema.minItems ?? 0;
      return fc.array(valid(schema.items, depth + 1), { minLength, maxLength: Math.min(schema.maxItems ?? 3, Math.max(minLength, 3)) });
    }
    case "object":
      return objectOf(schema, depth);
    default:
      return schema.properties ? objectOf(schema, depth) : fc.constant("x");
  }
}

function objectOf(schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties))
    model[name] = name in PINNED ? fc.constant(PINNED[name]) : valid(property, depth + 1);
  const record = fc.record(model, { requiredKeys: (schema.required ?? []).filter((k: string) => k in model) });
  if (schema.additionalProperties && typeof schema.additionalProperties === "object" && Object.keys(properties).length === 0) {
    const keys = schema.propertyNames
      ? (stringOf(schema.propertyNames) as fc.Arbitrary<string>)
      : fc.string({ minLength: 1, maxLength: 12, unit: "grapheme-ascii" });
    return fc.dictionary(keys, valid(schema.additionalProperties, depth + 1), { maxKeys: 2 });
  }
  return record as fc.Arbitrary<Record<string, unknown>>;
}

/** A value of another JSON type than the schema allows, or null when the schema allows every type. */
export function wrongTypeFor(schema: Schema | undefined): unknown {
  if (!schema) return null;
  const types = new Set<string>(
    (schema.anyOf ?? schema.oneOf ?? [schema]).flatMap((s: Schema) =>
      Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.enum ? ["enum"] : [],
    ),
  );
  if (types.size === 0) return null;
  if (!types.has("object") && !types.has("enum")) return { unexpected: true };
  if (!types.has("integer") && !types.has("number")) return 12345.5;
  if (!types.has("boolean")) return true;
  return null;
}
