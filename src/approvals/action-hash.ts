import { sha256Hex } from "../lib/crypto";

/** What an approval is for: the action kind, what it acts on, and its exact parameters. */
export interface ApprovalAction {
  kind: string;
  subject: string;
  params: Record<string, unknown>;
}

/**
 * JSON with object keys sorted at every depth and no whitespace, so the same action always has
 * the same bytes. Array order is kept (it is meaning). Absent (`undefined`) members are dropped,
 * as JSON.stringify would; anything that is not plain JSON data is refused rather than guessed at.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("canonicalJson: numbers must be finite");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  throw new TypeError(`canonicalJson: unsupported value of type ${typeof value}`);
}

/** `action_hash`: SHA-256 (hex) of the canonical JSON of `{kind, subject, params}`. */
export function actionHash(action: ApprovalAction): Promise<string> {
  return sha256Hex(canonicalJson({ kind: action.kind, subject: action.subject, params: action.params }));
}
