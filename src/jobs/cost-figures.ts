/**
 * What a completed job's result says it cost, for the cost ledger (`cost_entries`, docs/spend.md).
 * Pure. A figure the runner did not report is absent, never 0 (principle 4): a subscription CLI that
 * prices nothing has no `cost_usd`, and a job reporting nothing at all gets no ledger row.
 */
export interface CostFigures {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
  cost_usd?: number;
  /** What answered, when the run said (`model` of the result). */
  model?: string;
}

const TOKEN_KEYS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"] as const;
type TokenKey = (typeof TOKEN_KEYS)[number];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** A token count as SQLite's INTEGER keeps it exactly: a huge figure saturates rather than turning real. */
const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.min(Math.floor(v), Number.MAX_SAFE_INTEGER) : undefined;

function tokensOf(usage: unknown): Partial<Record<TokenKey, number>> {
  const out: Partial<Record<TokenKey, number>> = {};
  if (!isRecord(usage)) return out;
  for (const key of TOKEN_KEYS) {
    const n = count(usage[key]);
    if (n !== undefined) out[key] = n;
  }
  return out;
}

/**
 * The usage and price of a result: its `usage`, or for a team stage that answered over several calls
 * (`legs`) the legs' usage summed per figure over the legs that reported it, as the role ledger
 * counts it (src/team/ledger.ts `sumUsageLegs`). Null when the result reports neither a token
 * figure nor a price.
 */
export function costFiguresOf(result: Record<string, unknown> | undefined): CostFigures | null {
  if (!result) return null;
  let tokens: Partial<Record<TokenKey, number>> = {};
  if (!Array.isArray(result.legs)) tokens = tokensOf(result.usage);
  else {
    for (const leg of result.legs) {
      const figures = tokensOf(isRecord(leg) ? leg.usage : undefined);
      for (const key of TOKEN_KEYS)
        if (figures[key] !== undefined) tokens[key] = Math.min((tokens[key] ?? 0) + figures[key]!, Number.MAX_SAFE_INTEGER);
    }
  }
  const cost =
    typeof result.cost_usd === "number" && Number.isFinite(result.cost_usd) && result.cost_usd >= 0 ? result.cost_usd : undefined;
  if (Object.keys(tokens).length === 0 && cost === undefined) return null;
  const model = typeof result.model === "string" && result.model.length > 0 && result.model.length <= 200 ? result.model : undefined;
  return { ...tokens, ...(cost !== undefined ? { cost_usd: cost } : {}), ...(model ? { model } : {}) };
}
