/**
 * JSON with object keys sorted at every level, so two results that differ only in key order are
 * the same result. Inputs are bounded by JOB_LIMITS.resultDepth before they get here.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const object = value as Record<string, unknown>;
  // The default sort compares UTF-16 code units, the order `<` gives. One string built in a loop, not
  // entries filtered, sorted and mapped: the audit sealer hashes every event through this.
  let members = "";
  for (const key of Object.keys(object).sort()) {
    const member = object[key];
    if (member === undefined) continue;
    members += `${members === "" ? "" : ","}${JSON.stringify(key)}:${canonicalJson(member)}`;
  }
  return `{${members}}`;
}
