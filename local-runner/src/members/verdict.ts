/**
 * A verifier's answer → `{verdict, reasons}` (seed 002: the parser accepts the strict JSON object
 * `{"verdict":"PASS"|"FAIL","reasons":[…]}` or prose whose first token is PASS or FAIL, and fails
 * closed otherwise). Pure. `undefined` means unparseable: the Worker then records the round's
 * verdict as `unparseable`, which counts as FAIL — garbage is never accepted.
 */
export interface Verdict {
  verdict: "PASS" | "FAIL";
  reasons: string[];
}

const MAX_REASONS = 50;
const MAX_REASON = 2000;

export function parseVerdict(text: string): Verdict | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  for (const candidate of jsonCandidates(trimmed)) {
    const parsed = fromJson(candidate);
    if (parsed) return parsed;
  }
  // Prose: the first word decides, the rest (if any) is the one reason given.
  const lead = /^\**\s*(PASS|FAIL)\b[\s:.\-—*]*/i.exec(trimmed);
  if (!lead) return undefined;
  const rest = trimmed.slice(lead[0].length).trim();
  return { verdict: lead[1]!.toUpperCase() as Verdict["verdict"], reasons: rest ? [clip(rest)] : [] };
}

/** The whole text, a fenced ```json block, and the outermost {...} span, in that order. */
function jsonCandidates(text: string): string[] {
  const out = [text];
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n?```/i.exec(text);
  if (fenced) out.push(fenced[1]!.trim());
  const first = text.indexOf("{");
  const last = text.lastIndexOf("}");
  if (first !== -1 && last > first) out.push(text.slice(first, last + 1));
  return out;
}

function fromJson(candidate: string): Verdict | undefined {
  let value: unknown;
  try {
    value = JSON.parse(candidate);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const { verdict, reasons } = value as { verdict?: unknown; reasons?: unknown };
  if (typeof verdict !== "string") return undefined;
  const v = verdict.trim().toUpperCase();
  if (v !== "PASS" && v !== "FAIL") return undefined;
  const list = Array.isArray(reasons) ? reasons.filter((r): r is string => typeof r === "string" && r.trim() !== "") : [];
  return { verdict: v, reasons: list.slice(0, MAX_REASONS).map(clip) };
}

function clip(text: string): string {
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 1)}…` : text;
}

/** The JSON Schema a verdict answer must match (codex `--output-schema`; other CLIs get it in the prompt). */
export const VERDICT_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["verdict", "reasons"],
  properties: {
    verdict: { type: "string", enum: ["PASS", "FAIL"] },
    reasons: { type: "array", items: { type: "string" } },
  },
} as const;
