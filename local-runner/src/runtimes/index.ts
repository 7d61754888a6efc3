/**
 * Which runtimes this runner can serve. `offline` is built in; CLI runtimes are advertised only
 * when an executable for them is on PATH at startup. `antigravity` prefers `agy` and falls back to
 * the Gemini CLI `gemini`, its supported stand-in.
 */
import { findExecutable } from "../find-executable.ts";
import { agyRuntime, geminiRuntime } from "./antigravity.ts";
import { claudeRuntime } from "./claude.ts";
import { codexRuntime } from "./codex.ts";
import { grokRuntime } from "./grok.ts";
import type { CliRuntimeAdapter } from "./types.ts";

/** In order of preference within a runtime. */
export const CLI_RUNTIMES: readonly CliRuntimeAdapter[] = [claudeRuntime, codexRuntime, agyRuntime, geminiRuntime, grokRuntime];
export const KNOWN_RUNTIMES: readonly string[] = ["offline", ...new Set(CLI_RUNTIMES.map((r) => r.name))];

export type RuntimeEntry =
  { kind: "builtin"; name: "offline" } | { kind: "cli"; name: string; adapter: CliRuntimeAdapter; executable: string };

/** Runtime name → how to run it. Only what is in here is advertised to the Worker. */
export type RuntimeTable = ReadonlyMap<string, RuntimeEntry>;

export interface DetectionReport {
  runtimes: RuntimeTable;
  /** Requested (or known) CLI runtimes for which no executable was found. */
  missing: string[];
}

export function detectRuntimes(options: { only?: readonly string[]; pathValue?: string } = {}): DetectionReport {
  const wanted = (name: string): boolean => !options.only || options.only.includes(name);
  const runtimes = new Map<string, RuntimeEntry>();
  if (wanted("offline")) runtimes.set("offline", { kind: "builtin", name: "offline" });
  for (const adapter of CLI_RUNTIMES) {
    if (!wanted(adapter.name) || runtimes.has(adapter.name)) continue;
    const executable = findExecutable(adapter.command, options.pathValue);
    if (executable) runtimes.set(adapter.name, { kind: "cli", name: adapter.name, adapter, executable });
  }
  const missing = [...new Set(CLI_RUNTIMES.map((a) => a.name))].filter((name) => wanted(name) && !runtimes.has(name));
  return { runtimes, missing };
}

/**
 * A table with CLI runtimes pinned to given executables, keyed by command (`claude`, `codex`, `agy`,
 * `gemini`, `grok`); tests use the fake CLIs this way.
 */
export function runtimeTable(executables: Partial<Record<string, string>> = {}): RuntimeTable {
  const runtimes = new Map<string, RuntimeEntry>([["offline", { kind: "builtin", name: "offline" }]]);
  for (const adapter of CLI_RUNTIMES) {
    const executable = executables[adapter.command];
    if (executable && !runtimes.has(adapter.name)) runtimes.set(adapter.name, { kind: "cli", name: adapter.name, adapter, executable });
  }
  return runtimes;
}
