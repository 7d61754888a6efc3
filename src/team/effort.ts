import type { TeamRuntime } from "./catalog";
import { EFFORT_LEVELS, type EffortLevel } from "../jobs/team-vocabulary";
/** Effort levels (seed 002 "effort"), parsed case-insensitively in exactly one place. */
export { EFFORT_LEVELS, type EffortLevel } from "../jobs/team-vocabulary";

/** The level a raw config string names, or null (the caller refuses the team with `invalid_effort`). */
export function parseEffort(raw: string): EffortLevel | null {
  const v = raw.trim().toLowerCase();
  return (EFFORT_LEVELS as readonly string[]).includes(v) ? (v as EffortLevel) : null;
}

/**
 * The highest level each runtime's CLI accepts. codex documents `minimal|low|medium|high|xhigh`
 * (model-clis.md §2), so `max` is capped there; the others accept all five.
 */
const RUNTIME_CAP: Readonly<Record<TeamRuntime, EffortLevel>> = {
  claude: "max",
  codex: "xhigh",
  antigravity: "max",
  grok: "max",
};

export interface RuntimeEffort {
  /** The level actually passed to the CLI after the runtime's cap. */
  level: EffortLevel;
  /** True when the runtime's cap lowered the requested level (reported, never silent). */
  capped: boolean;
  /** The CLI arguments that carry it, as each vendor spells the flag. */
  argv: string[];
}

/**
 * Maps a resolved effort onto a runtime's CLI: claude `--effort`, codex
 * `-c model_reasoning_effort="…"` (a quoted TOML string: codex parses `-c` values as TOML), antigravity
 * `--effort`, grok `--reasoning-effort`. No effort → no flag at all, so the vendor's default applies.
 */
export function effortForRuntime(runtime: TeamRuntime, effort: EffortLevel | undefined): RuntimeEffort | null {
  if (effort === undefined) return null;
  const cap = RUNTIME_CAP[runtime];
  const capped = EFFORT_LEVELS.indexOf(effort) > EFFORT_LEVELS.indexOf(cap);
  const level = capped ? cap : effort;
  switch (runtime) {
    case "claude":
      return { level, capped, argv: ["--effort", level] };
    case "codex":
      return { level, capped, argv: ["-c", `model_reasoning_effort="${level}"`] };
    case "antigravity":
      return { level, capped, argv: ["--effort", level] };
    case "grok":
      return { level, capped, argv: ["--reasoning-effort", level] };
  }
}
