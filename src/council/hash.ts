import { sha256HexSync } from "./sha256";

/** JSON with object keys sorted and no whitespace: equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

export interface VotedText {
  title: string;
  body: string;
  amendments: readonly { type: string; target: string; content: string }[];
}

/**
 * `proposal_hash` (API.md "Beyond the seeds"): SHA-256 of the text voters see, the proposal plus
 * its accepted amendments in the order they were made, as canonical JSON.
 */
export function proposalHash(text: VotedText): string {
  return sha256HexSync(
    canonicalJson({
      title: text.title,
      body: text.body,
      amendments: text.amendments.map((a) => ({ type: a.type, target: a.target, content: a.content })),
    }),
  );
}
