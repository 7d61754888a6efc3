/**
 * The model string a node reports (`hello` payload `model`) sets its tier (0-5), EvoMap's table:
 *
 * | tier | label        | EvoMap's examples                              | matched here (first rule wins)                       |
 * |------|--------------|------------------------------------------------|------------------------------------------------------|
 * | 5    | experimental | o3, o4-mini, claude-opus-4-high-thinking       | `o3*`, `o4-mini*`, `*-high-thinking`                 |
 * | 4    | frontier     | claude-opus-4, gpt-5, gemini-ultra             | `claude-opus-N*`, `opus`, `gpt-5*`, `gemini*ultra*`  |
 * | 3    | advanced     | gemini-2.5-pro, gpt-4.5, claude-sonnet-4       | `gemini-(2.5|3+)*-pro*`, `gpt-4.5*`, `claude-sonnet-N*` (N ≥ 4), `sonnet` |
 * | 2    | standard     | gemini-2.0-flash-thinking, gpt-4o, claude-sonnet | `gemini-*-flash-thinking*`, `gpt-4o`, `gpt-4.1`, `claude-3*-sonnet*`, `claude-sonnet` |
 * | 1    | basic        | gemini-2.0-flash, gpt-4o-mini, claude-haiku    | `gemini-*-flash*`, `gpt-4o-mini*`, `gpt-4.1-mini*`, `*haiku*` |
 * | 0    | unclassified | unknown or unreported                          | everything else                                      |
 *
 * Case-insensitive; a vendor prefix (`anthropic/`, `openai/`, `google/`, `models/`) is ignored.
 */
export const TIER_LABELS = ["unclassified", "basic", "standard", "advanced", "frontier", "experimental"] as const;

export const MODEL_TIER_RULES: readonly { tier: number; pattern: RegExp }[] = [
  { tier: 5, pattern: /^o3(\b|-|$)/ },
  { tier: 5, pattern: /^o4-mini(\b|-|$)/ },
  { tier: 5, pattern: /-high-thinking$/ },
  { tier: 4, pattern: /^claude-opus-\d/ },
  { tier: 4, pattern: /^claude-\d(-\d)?-opus/ },
  { tier: 4, pattern: /^opus$/ },
  { tier: 4, pattern: /^gpt-5(\b|\.|-|$)/ },
  { tier: 4, pattern: /^gemini.*ultra/ },
  { tier: 3, pattern: /^gemini-(2\.5|[3-9](\.\d+)?)-pro/ },
  { tier: 3, pattern: /^gpt-4\.5(\b|-|$)/ },
  { tier: 3, pattern: /^claude-sonnet-([4-9]|\d{2})/ },
  { tier: 3, pattern: /^sonnet$/ },
  { tier: 2, pattern: /^gemini-[\d.]+-flash-thinking/ },
  { tier: 1, pattern: /^gpt-4o-mini(\b|-|$)/ },
  { tier: 1, pattern: /^gpt-4\.1-mini(\b|-|$)/ },
  { tier: 2, pattern: /^gpt-4o(\b|-|$)/ },
  { tier: 2, pattern: /^gpt-4\.1(\b|-|$)/ },
  { tier: 2, pattern: /^claude-3(-\d)?-sonnet/ },
  { tier: 2, pattern: /^claude-sonnet$/ },
  { tier: 1, pattern: /^gemini-[\d.]+-flash/ },
  { tier: 1, pattern: /haiku/ },
];

export function modelTier(model: string | undefined | null): { tier: number; label: (typeof TIER_LABELS)[number] } {
  const name = (model ?? "")
    .trim()
    .toLowerCase()
    .replace(/^(anthropic|openai|google|models)\//, "");
  const tier = name ? (MODEL_TIER_RULES.find((r) => r.pattern.test(name))?.tier ?? 0) : 0;
  return { tier, label: TIER_LABELS[tier]! };
}
