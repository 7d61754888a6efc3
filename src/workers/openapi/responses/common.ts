import * as z from "zod";

/** An ISO 8601 timestamp as the API writes it (the request clock's `toISOString()`). */
export const timestamp = z.string().describe("ISO 8601 timestamp");

/** A JSON object whose members the API does not fix (params, evidence, payloads). */
export const jsonObject = z.record(z.string(), z.unknown());
