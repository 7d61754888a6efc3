/**
 * TOML values for codex `-c key=value` overrides and grok's config file. Every scalar is written as a
 * quoted TOML string: codex parses the value side as TOML, so an unquoted `18999` became an integer
 * and an env table that wants strings refused to load (seed 002, live round 3, "the port bug").
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A TOML basic string. JSON's escaping is TOML-compatible except for DEL, which TOML wants escaped. */
export function tomlString(value: string): string {
  if (LONE_SURROGATE.test(value)) throw new Error("a TOML string cannot hold a lone surrogate");
  return JSON.stringify(value).replace(/\x7f/g, "\\u007f");
}

export function tomlArray(values: readonly string[]): string {
  return `[${values.map(tomlString).join(", ")}]`;
}

/** An inline table of strings: `{ KEY = "v", "odd key" = "w" }`. */
export function tomlInlineTable(entries: Readonly<Record<string, string>>): string {
  const parts = Object.entries(entries).map(([key, value]) => `${tomlKey(key)} = ${tomlString(value)}`);
  return parts.length === 0 ? "{}" : `{ ${parts.join(", ")} }`;
}

/** A bare key when TOML allows it, else a quoted one. */
export function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}
