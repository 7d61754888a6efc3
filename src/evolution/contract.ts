import * as z from "zod";

/**
 * An employee's behavioural contract (seed 003 §5.3 CONTRACT.toml `[boundaries]`, §6.2). Both evolution
 * paths enforce it with zero model cost: the legacy verifier's L1 against the simulated final SOUL.md,
 * the AEE Gate's G-Contract against the candidate playbook. Matching is a case-insensitive substring
 * search (§6.2), nothing cleverer: a contract is a promise the operator reads literally.
 */
export const contractSchema = z.strictObject({
  must_not: z.array(z.string().trim().min(1).max(200)).max(64).default([]),
  must_always: z.array(z.string().trim().min(1).max(200)).max(64).default([]),
  max_tool_calls_per_turn: z.int().min(0).max(1_000).optional(),
});
export type Contract = z.infer<typeof contractSchema>;

export const EMPTY_CONTRACT: Contract = { must_not: [], must_always: [] };

/**
 * Lower-casing for the substring search. `toLowerCase` on both sides keeps the comparison symmetric
 * even where lower-casing changes the length (İ → i̇): the search never maps an offset back into the
 * original text, so no multibyte character can shift it.
 */
const fold = (s: string) => s.toLowerCase();

/** The `must_not` phrases the text contains (case-insensitive substrings), in contract order. */
export function mustNotHits(text: string, contract: Pick<Contract, "must_not">): string[] {
  const t = fold(text);
  return contract.must_not.filter((p) => t.includes(fold(p)));
}

/** The `must_always` phrases the text lacks (case-insensitive substrings), in contract order. */
export function mustAlwaysMissing(text: string, contract: Pick<Contract, "must_always">): string[] {
  const t = fold(text);
  return contract.must_always.filter((p) => !t.includes(fold(p)));
}

/** Whether a turn's tool calls stay within the contract; no limit set means no limit. */
export function toolCallsWithin(count: number, contract: Pick<Contract, "max_tool_calls_per_turn">): boolean {
  return contract.max_tool_calls_per_turn === undefined || count <= contract.max_tool_calls_per_turn;
}

/**
 * Secrets a proposal must never carry (seed 003 §4.4 L1 "sk-ant-, API_KEY=, token= など", and the AEE
 * G-Contract's 機密パターン). Each pattern has a stable id for the refusal's detail. Matched on the raw
 * text, case-insensitively: a secret is a literal, so no normalization is needed to find it.
 */
export const SECRET_PATTERNS: readonly { id: string; regex: RegExp }[] = [
  { id: "anthropic_key", regex: /sk-ant-/i },
  { id: "openai_key", regex: /\bsk-(?:proj-)?[a-z0-9_-]{16,}/i },
  { id: "api_key_assignment", regex: /\bapi[_-]?key\s*[=:]/i },
  { id: "token_assignment", regex: /\b(?:access_|auth_|bearer_|refresh_)?token\s*[=:]/i },
  { id: "secret_assignment", regex: /\b(?:client_)?secret\s*[=:]|\bpassword\s*[=:]/i },
  { id: "bearer_header", regex: /\bauthorization:\s*bearer\s+\S{8,}/i },
  { id: "aws_access_key", regex: /\bAKIA[0-9A-Z]{16}\b/ },
  { id: "github_token", regex: /\bgh[pousr]_[A-Za-z0-9]{20,}/ },
  { id: "slack_token", regex: /\bxox[abprs]-[A-Za-z0-9-]{10,}/ },
  { id: "private_key_block", regex: /-----BEGIN [A-Z ]*PRIVATE KEY-----/ },
];

/** The ids of the secret patterns the text matches. */
export function secretHits(text: string): string[] {
  return SECRET_PATTERNS.filter((p) => p.regex.test(text)).map((p) => p.id);
}
