export declare const FATAL_RUNNER_EXITS: ReadonlyMap<number, string>;
export declare const RESTART_INITIAL_MS: number;
export declare const RESTART_MAX_MS: number;
export declare const STABLE_RUN_MS: number;
export type RestartDecision = { restart: false; reason: string } | { restart: true; delayMs: number; failures: number };
export declare function restartDecision(input: {
  code: number | null;
  signal: NodeJS.Signals | null;
  ranMs: number;
  failures: number;
}): RestartDecision;
export declare function describeExit(code: number | null, signal: NodeJS.Signals | null): string;
