/**
 * The effort scale resolved once (low|medium|high|xhigh|max) and spelled per runtime at spawn
 * (seed 002 "effort"; issue 10 item 2): claude `--effort`, codex `-c model_reasoning_effort=`,
 * antigravity (`agy`) `--effort`, grok `--reasoning-effort`. Unset effort passes no flag at all.
 */
import { tomlString } from "./toml.ts";
import type { Effort, EffortMapping } from "./types.ts";

export type EffortSpelling = "claude" | "codex" | "agy" | "gemini" | "grok";

/** Codex documents minimal|low|medium|high|xhigh; `max` is clamped to its ceiling. */
const CODEX_EFFORT: Record<Effort, string> = { low: "low", medium: "medium", high: "high", xhigh: "xhigh", max: "xhigh" };

export function mapEffort(spelling: EffortSpelling, effort: Effort | undefined): { args: string[]; mapping: EffortMapping } {
  if (effort === undefined) return { args: [], mapping: {} };
  switch (spelling) {
    case "claude":
      return { args: ["--effort", effort], mapping: { requested: effort, applied: effort } };
    case "codex": {
      const applied = CODEX_EFFORT[effort];
      return {
        args: ["-c", `model_reasoning_effort=${tomlString(applied)}`],
        mapping: {
          requested: effort,
          applied,
          ...(applied !== effort ? { note: `codex has no "${effort}" effort; clamped to its highest, "${applied}"` } : {}),
        },
      };
    }
    case "agy":
      return { args: ["--effort", effort], mapping: { requested: effort, applied: effort } };
    case "gemini":
      // The Gemini CLI has no per-call effort or thinking flag (reference model-clis.md §3): say so.
      return {
        args: [],
        mapping: { requested: effort, applied: null, note: "the gemini CLI (antigravity stand-in) has no per-call effort flag" },
      };
    case "grok":
      return { args: ["--reasoning-effort", effort], mapping: { requested: effort, applied: effort } };
  }
}
