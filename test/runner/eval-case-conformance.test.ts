/**
 * Conformance of the `eval_case` argv with the REAL claude and codex (the devDependencies), run with
 * no credentials and no network: claude's `--strict-mcp-config` without a config, the employee tool
 * set and the effort must be accepted (no usage error) and end as an auth or network failure naming
 * what ran; the eval dir must be gone and nothing left running.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evalRootFor } from "../../local-runner/src/eval/workspace.ts";
import { runEvalCaseJob } from "../../local-runner/src/jobs/eval-case.ts";
import { runtimeTable } from "../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../local-runner/src/work-dir.ts";
import { realClaude, realCodex, tempDir } from "./helpers/paths.ts";
import { expectNothingRunning } from "./helpers/proc-scan.ts";

const USAGE_ERRORS =
  /unknown option|error: option|argument missing|error: unexpected argument|error: invalid value|a value is required|Error loading config|Usage: /;

describe("eval_case argv on the real CLIs", () => {
  it.each([
    ["claude", realClaude, "claude-sonnet-5-5", 90_000],
    ["codex", realCodex, "gpt-5.5", 10_000],
  ] as const)(
    "runs a %s eval case to an auth/network failure, never a usage error, and removes its dir",
    async (runtime, executable, model, timeoutMs) => {
      if (!existsSync(executable)) return;
      const { dir, cleanup } = tempDir("crewplane-eval-conformance-");
      try {
        const home = join(dir, "runner-home");
        const jobId = `job-eval-${runtime}`;
        const outcome = await runEvalCaseJob(
          {
            job_id: jobId,
            payload: {
              runtime,
              model,
              effort: "high",
              run_id: "evrun_c",
              case_id: "pong",
              domain: "conformance",
              // A seeded .mcp.json must not give claude a server: the run has none at all.
              workspace_files: { "brief.txt": "Say pong.\n", ".mcp.json": '{"mcpServers":{"x":{"command":"false"}}}' },
              observe_paths: ["brief.txt"],
              prompt: "# Eval case conformance/pong\nReply with the word pong.",
              timeout_ms: timeoutMs,
            },
          },
          {
            runtimes: runtimeTable({ [runtime]: executable }),
            home,
            signal: new AbortController().signal,
            env: {
              PATH: process.env.PATH ?? "/usr/bin:/bin",
              HOME: dir,
              CODEX_HOME: dir,
              LANG: "C.UTF-8",
              TMPDIR: process.env.TMPDIR ?? "/tmp",
            },
          },
        );
        const workDir = workDirFor(home, jobId);
        const stderr = readFileSync(join(workDir, "stderr.log"), "utf8");
        const stream = readFileSync(join(workDir, "stream.jsonl"), "utf8");
        expect(stderr).not.toMatch(USAGE_ERRORS);
        expect(outcome, `stderr: ${stderr}\nstream: ${stream.slice(0, 2000)}`).toMatchObject({
          kind: "failed",
          failure: { ran: { runtime } },
        });
        if (outcome.kind === "failed") expect(["not_logged_in", "network_error"]).toContain(outcome.failure.code);
        if (runtime === "claude") expect(stream).toContain('"mcp_servers":[]');
        expect(readdirSync(evalRootFor(home))).toEqual([]);
        await expectNothingRunning(home);
      } finally {
        cleanup();
      }
    },
    180_000,
  );
});
