/**
 * Conformance with the REAL claude binary (the devDependency), run without credentials: the
 * adapter's argv must be accepted, and a not-logged-in CLI must come out as `not_logged_in` —
 * never as a completed job and never as a hang.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runUtilityJob } from "../../local-runner/src/jobs/utility.ts";
import { runtimeTable } from "../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../local-runner/src/work-dir.ts";
import { realClaude, tempDir } from "./helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Only what a process needs to run; no ANTHROPIC_* or other credentials leak in from the host. */
function credentialFreeEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8", TMPDIR: process.env.TMPDIR ?? "/tmp" };
}

describe.skipIf(!existsSync(realClaude))("real claude (not logged in)", () => {
  it.each([
    ["a plain prompt", "Reply with the word pong.", undefined],
    ['a prompt starting with "-" and a model', "--version? no: say pong", "sonnet"],
  ])(
    "accepts the adapter argv for %s and reports not_logged_in",
    async (_label, prompt, model) => {
      const { dir, cleanup } = tempDir("crewplane-claude-conformance-");
      cleanups.push(cleanup);
      const home = join(dir, "runner-home");
      const jobId = "job-real-claude";
      const outcome = await runUtilityJob(
        { job_id: jobId, payload: { runtime: "claude", prompt, ...(model ? { model } : {}), timeout_ms: 60_000 } },
        { runtimes: runtimeTable({ claude: realClaude }), home, signal: new AbortController().signal, env: credentialFreeEnv(dir) },
      );

      const workDir = workDirFor(home, jobId);
      const stderr = readFileSync(join(workDir, "stderr.log"), "utf8");
      expect(stderr).not.toMatch(/unknown option|error: option|argument missing|Usage:/);
      expect(outcome, `stderr: ${stderr}\nstream: ${readFileSync(join(workDir, "stream.jsonl"), "utf8").slice(0, 2000)}`).toMatchObject({
        kind: "failed",
        failure: { code: "not_logged_in", retryable: false },
      });
    },
    90_000,
  );
});
