/**
 * Which runtimes this runner can serve. `offline` is built in; CLI runtimes are advertised only
 * when their executable is on PATH at startup.
 */
import { findExecutable } from "../find-executable.ts";
import { claudeRuntime } from "./claude.ts";
import type { CliRuntimeAdapter } from "./types.ts";

export const CLI_RUNTIMES: readonly CliRuntimeAdapter[] = [claudeRuntime];
export const KNOWN_RUNTIMES: readonly string[] = ["offline", ...CLI_RUNTIMES.map((r) => r.name)];

export type RuntimeEntry =
  { kind: "builtin"; name: "offline" } | { kind: "cli"; name: string; adapter: CliRuntimeAdapter; executable: string };

/** Runtime name → how to run it. Only what is in here is advertised to the Worker. */
export type RuntimeTable = ReadonlyMap<string, RuntimeEntry>;

export interface DetectionReport {
  runtimes: RuntimeTable;
  /** Requested (or known) CLI runtimes whose executable was not found. */
  missing: string[];
}

export function detectRuntimes(options: { only?: readonly string[]; pathValue?: string } = {}): DetectionReport {
  const wanted = (name: string): boolean => !options.only || options.only.includes(name);
  const runtimes = new Map<string, RuntimeEntry>();
  const missing: string[] = [];
  if (wanted("offline")) runtimes.set("offline", { kind: "builtin", name: "offline" });
  for (const adapter of CLI_RUNTIMES) {
    if (!wanted(adapter.name)) continue;
    const executable = findExecutable(adapter.command, options.pathValue);
    if (executable) runtimes.set(adapter.name, { kind: "cli", name: adapter.name, adapter, executable });
    else missing.push(adapter.name);
  }
  return { runtimes, missing };
}

/** A table with CLI runtimes pinned to given executables (tests use the fake CLIs this way). */
export function runtimeTable(executables: Record<string, string> = {}): RuntimeTable {
  const runtimes = new Map<string, RuntimeEntry>([["offline", { kind: "builtin", name: "offline" }]]);
  for (const adapter of CLI_RUNTIMES) {
    const executable = executables[adapter.name];
    if (executable) runtimes.set(adapter.name, { kind: "cli", name: adapter.name, adapter, executable });
  }
  return runtimes;
}
