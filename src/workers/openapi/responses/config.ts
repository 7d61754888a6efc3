import { jsonObject } from "./common";

/**
 * A config section as clients see it: its effective values (every field, defaults filled in), or
 * the section's own view of them. Each section has its own fields (src/workers/config-sections.ts).
 */
export const configSectionSchema = jsonObject.describe("The section's effective values; its members are the section's own");
