/**
 * What a runtime adapter looks like. Adapters are pure: they build argv and interpret output;
 * running the process is `process-runner.ts`'s job and reporting is the poll loop's.
 */
import type { FailureCode, Usage } from "../protocol.ts";

export interface PromptInput {
  prompt: string;
  model?: string;
}

/** What a finished stream says, before the process's exit status is taken into account. */
export type StreamOutcome =
  | { kind: "success"; text: string; model?: string; sessionId?: string; usage?: Usage; costUsd?: number }
  | {
      kind: "error";
      code: Extract<FailureCode, "not_logged_in" | "cli_error" | "max_turns">;
      message: string;
      model?: string;
      sessionId?: string;
    }
  /** The stream ended without the CLI's final event. */
  | { kind: "no_result"; model?: string; sessionId?: string };

export interface StreamParser {
  push(line: string): void;
  /** True once the final event has been seen; later output cannot change success into failure. */
  readonly done: boolean;
  finish(): StreamOutcome;
}

/** A runtime backed by a model CLI found on PATH. */
export interface CliRuntimeAdapter {
  name: string;
  /** Executable name looked up on PATH. */
  command: string;
  buildArgv(input: PromptInput): string[];
  createParser(): StreamParser;
}
