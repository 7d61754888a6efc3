/**
 * Stand-ins for the schema converters hono-openapi imports (wrangler.toml `[alias]`). crewplane
 * converts its zod schemas itself with zod's own `z.toJSONSchema` (json-schema.ts) and uses only
 * hono-openapi's route walking (`generateSpecs`, `describeRoute`); the converters would bring every
 * schema library's adapter, zod v3 and zod-to-json-schema into the Worker (about 250 KB) unused.
 * Reaching one of these is a bug: it throws instead of converting badly.
 */
function unused(name: string): never {
  throw new Error(`${name} is not bundled: crewplane converts schemas with z.toJSONSchema (src/workers/openapi/json-schema.ts)`);
}

export const sValidator = () => unused("sValidator");
export const loadVendor = () => unused("loadVendor");
export const toJsonSchema = () => unused("toJsonSchema");
export const toOpenAPISchema = () => unused("toOpenAPISchema");
