import type { GoldVerdict } from "./case-schema";

/**
 * A verifier cell's reply, read as a verdict (seed 002: a reply whose first line carries neither
 * verdict is `unparseable`, counted, and kept out of every rate, because "cannot answer in the asked
 * form" is a different finding from "judges badly"). Two shapes are accepted: the structured object
 * `{"verdict": "PASS" | "FAIL", ...}` (bare, or alone in a fenced code block), tried first so a FAIL
 * inside its reasons cannot flip it; else the first non-empty line's verdict token. A first line
 * naming both verdicts reads as FAIL: where a verifier guards, ambiguity fails closed.
 */
export type VerifierReply = GoldVerdict | "unparseable";

export function parseVerifierReply(reply: string): VerifierReply {
  const structured = structuredVerdict(reply);
  if (structured) return structured;
  const firstLine = reply.split(/\r?\n/).find((line) => line.trim() !== "") ?? "";
  const tokens = firstLine.split(/[^A-Za-z]+/);
  if (tokens.includes("FAIL")) return "FAIL";
  if (tokens.includes("PASS")) return "PASS";
  return "unparseable";
}

function structuredVerdict(reply: string): GoldVerdict | undefined {
  const trimmed = reply.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n```$/.exec(trimmed);
  const body = fenced ? fenced[1]! : trimmed;
  if (!body.startsWith("{")) return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      const v = (parsed as Record<string, unknown>).verdict;
      if (v === "PASS" || v === "FAIL") return v;
    }
  } catch {
    // Not the structured shape; the first-line form decides.
  }
  return undefined;
}
