import { TEAM_RUNTIMES, type TeamRuntime } from "../jobs/team-vocabulary";
export { TEAM_RUNTIMES, type TeamRuntime } from "../jobs/team-vocabulary";
/**
 * The runtime catalog (seed 002, rule 1 and 2): which model families each team runtime serves.
 * Only the first batch of runtimes may host a role, because only they register crewplane's MCP
 * server natively; a role that silently lost its tools would narrate work it never did.
 */

export const MODEL_FAMILIES = ["claude", "openai", "gemini", "grok"] as const;
export type ModelFamily = (typeof MODEL_FAMILIES)[number];

/** Each runtime serves exactly one family; the family is what the verifier rule compares. */
export const RUNTIME_FAMILY: Readonly<Record<TeamRuntime, ModelFamily>> = {
  claude: "claude",
  codex: "openai",
  antigravity: "gemini",
  grok: "grok",
};

const FAMILY_RUNTIME: Readonly<Record<ModelFamily, TeamRuntime>> = {
  claude: "claude",
  openai: "codex",
  gemini: "antigravity",
  grok: "grok",
};

/** Runtime spellings that name the same runtime (the seed writes `agy` as `antigravity`). */
const RUNTIME_ALIASES: Readonly<Record<string, TeamRuntime>> = { agy: "antigravity" };

/**
 * The runtime a string names, normalised (trimmed, lower case, aliases resolved), or null when it
 * is not a team runtime (`offline`, `openai_compat`, `qwen`, `copilot`, `cursor`, anything else).
 */
export function normalizeRuntime(value: string): TeamRuntime | null {
  const v = value.trim().toLowerCase();
  const aliased = RUNTIME_ALIASES[v] ?? v;
  return (TEAM_RUNTIMES as readonly string[]).includes(aliased) ? (aliased as TeamRuntime) : null;
}

/**
 * The family of a model id by its prefix: `claude-*`; `gpt-*`, `o<digit>*`, `codex-*`; `gemini-*`;
 * `grok-*`. Anything else is unknown and stays unknown: a provider is never guessed for it.
 */
export function modelFamily(model: string): ModelFamily | null {
  const m = model.trim().toLowerCase();
  if (m.startsWith("claude-")) return "claude";
  if (m.startsWith("gpt-") || m.startsWith("codex-") || /^o\d/.test(m)) return "openai";
  if (m.startsWith("gemini-")) return "gemini";
  if (m.startsWith("grok-")) return "grok";
  return null;
}

export function runtimeForFamily(family: ModelFamily): TeamRuntime {
  return FAMILY_RUNTIME[family];
}
