/**
 * Utility jobs run through the real process-running code against the fake `claude`.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ACCEPTANCE_SCHEMA } from "../../../local-runner/src/jobs/output-schemas.ts";
import { runUtilityJob } from "../../../local-runner/src/jobs/utility.ts";
import type { JobOutcome } from "../../../local-runner/src/jobs/utility.ts";
import { VERDICT_SCHEMA } from "../../../local-runner/src/members/verdict.ts";
import { buildArgv } from "../../../local-runner/src/runtimes/claude.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../../local-runner/src/work-dir.ts";
import { claudeFixtures, fakeClaude, fakeClis, tempDir } from "../helpers/paths.ts";
import { expectAllDead, readFakePids, waitFor } from "../helpers/processes.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function setup(env: Record<string, string> = {}) {
  const { dir: home, cleanup } = tempDir();
  cleanups.push(cleanup);
  const argvLog = join(home, "argv.jsonl");
  const controller = new AbortController();
  const ctx = {
    runtimes: runtimeTable({ claude: fakeClaude }),
    home,
    signal: controller.signal,
    env: { ...process.env, FAKE_ARGV_LOG: argvLog, ...env },
    killGraceMs: 2000,
  };
  const run = (payload: Record<string, unknown>, jobId = `job-${Math.random().toString(36).slice(2)}`): Promise<JobOutcome> =>
    runUtilityJob({ job_id: jobId, payload: { runtime: "claude", timeout_ms: 20_000, ...payload } }, ctx);
  const calls = (): Array<{ argv: string[]; cwd: string; stdinClosed: boolean }> =>
    existsSync(argvLog)
      ? readFileSync(argvLog, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l))
      : [];
  return { home, controller, run, calls };
}

describe("utility job on the fake claude", () => {
  it("completes with the final text, model, session, usage and cost", async () => {
    const { run } = setup();
    const outcome = await run({ prompt: "Write a haiku about queues" });
    expect(outcome.kind).toBe("completed");
    if (outcome.kind !== "completed") return;
    expect(outcome.result).toMatchObject({
      text: "FAKE_OK: Write a haiku about queues",
      runtime: "claude",
      model: "claude-sonnet-5-5",
      session_id: "fa4e0000-0000-4000-8000-000000000001",
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 },
      cost_usd: 0.0001,
    });
    expect(outcome.result.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("passes the adapter argv verbatim and the prompt on stdin (then closed), in the per-job work dir", async () => {
    const { run, calls, home } = setup();
    const prompt = "-starts with a dash";
    const outcome = await run({ prompt, model: "opus" }, "job-argv");
    expect(outcome).toMatchObject({ kind: "completed", result: { model: "claude-opus-5-5", text: `FAKE_OK: ${prompt}` } });
    const [call] = calls();
    expect(call?.argv).toEqual(buildArgv({ prompt, model: "opus" }));
    expect(call?.argv).not.toContain(prompt);
    expect(call).toMatchObject({ stdinClosed: true, prompt });
    const workDir = workDirFor(home, "job-argv");
    expect(call?.cwd).toBe(workDir);
    expect(readFileSync(join(workDir, "stream.jsonl"), "utf8")).toContain('"type":"result"');
    expect(existsSync(join(workDir, "stderr.log"))).toBe(true);
  });

  it("fails with not_logged_in (not retryable) when the CLI is not logged in", async () => {
    const { run } = setup({ FAKE_SCENARIO: "fail" });
    const outcome = await run({ prompt: "hello" });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "not_logged_in", retryable: false } });
  });

  it("still fails with not_logged_in when the CLI exits 0", async () => {
    const { run } = setup({ FAKE_EXIT_CODE: "0" });
    const outcome = await run({ prompt: "[[fake:fail]] hello" });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "not_logged_in" } });
  });

  it("fails with max_turns when the turn limit is hit", async () => {
    const { run } = setup();
    const outcome = await run({ prompt: "[[fake:maxturns]] go" });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "max_turns", retryable: false } });
  });

  it("fails retryably with api_unavailable when claude gave up on an overloaded API (529)", async () => {
    const { run } = setup();
    const outcome = await run({ prompt: "[[fake:overloaded]] go" });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "api_unavailable", retryable: true } });
    expect(outcome.kind === "failed" && outcome.failure.message).toMatch(/HTTP 529.*Overloaded/);
  });

  it("completes despite garbage lines and stderr noise", async () => {
    const { run } = setup({ FAKE_SCENARIO: "garbage" });
    expect(await run({ prompt: "noisy" })).toMatchObject({ kind: "completed", result: { text: "FAKE_OK: noisy" } });
  });

  it("fails with incomplete_output, exit code and stderr when the stream has no final result", async () => {
    const { run } = setup({ FAKE_SCENARIO: "truncated" });
    const outcome = await run({ prompt: "cut" });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "incomplete_output", retryable: true } });
    if (outcome.kind !== "failed") return;
    expect(outcome.failure.message).toContain("exited with code 0");
    expect(outcome.failure.message).toContain("stream closed before the final result");
  });

  it("kills a hanging CLI and its grandchild at timeout_ms and fails with timeout", async () => {
    const { run, home } = setup();
    const outcome = await run({ prompt: "[[fake:hang]]", timeout_ms: 1500 }, "job-hang");
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "timeout", retryable: true } });
    if (outcome.kind === "failed") expect(outcome.failure.message).toMatch(/ran for \d+\.\d s with no result.*1500 ms/);
    const pids = readFakePids(workDirFor(home, "job-hang"));
    expect(pids).toBeDefined();
    await expectAllDead(pids!);
  });

  it("completes soon after the final result when the CLI then never exits, instead of holding the job to its timeout", async () => {
    const { run, home } = setup();
    const started = Date.now();
    const outcome = await run({ prompt: "[[fake:linger]] answer then stay up", timeout_ms: 20_000 }, "job-linger");
    expect(outcome).toMatchObject({ kind: "completed", result: { text: "FAKE_OK: [[fake:linger]] answer then stay up" } });
    // Generous for a slow machine; the bug held the job for the whole 20 s timeout.
    expect(Date.now() - started).toBeLessThan(15_000);
    await expectAllDead(readFakePids(workDirFor(home, "job-linger"))!);
  });

  it("escalates to SIGKILL when the CLI ignores SIGTERM", async () => {
    const { run, home } = setup({ FAKE_IGNORE_SIGTERM: "1" });
    const outcome = await run({ prompt: "[[fake:hang]]", timeout_ms: 1500 }, "job-stubborn");
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "timeout" } });
    await expectAllDead(readFakePids(workDirFor(home, "job-stubborn"))!);
  });

  it("returns aborted and kills the process group when the runner aborts the job", async () => {
    const { run, home, controller } = setup();
    const pending = run({ prompt: "[[fake:hang]]", timeout_ms: 60_000 }, "job-abort");
    const pids = await waitFor(() => readFakePids(workDirFor(home, "job-abort")), "the fake to record its pids");
    controller.abort();
    expect(await pending).toEqual({ kind: "aborted" });
    await expectAllDead(pids);
  });

  it("fails with spawn_failed when the executable cannot be started", async () => {
    const { home } = setup();
    const outcome = await runUtilityJob(
      { job_id: "job-enoent", payload: { runtime: "claude", prompt: "x", timeout_ms: 5000 } },
      { runtimes: runtimeTable({ claude: join(home, "no-such-claude") }), home, signal: new AbortController().signal },
    );
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "spawn_failed", retryable: false } });
    if (outcome.kind === "failed") expect(outcome.failure.message).toContain("ENOENT");
  });

  it("fails with unsupported_job for a runtime this runner does not offer", async () => {
    const { run } = setup();
    const outcome = await run({ runtime: "codex", prompt: "x" });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    if (outcome.kind === "failed") expect(outcome.failure.message).toContain("codex");
  });

  it("fails with unsupported_job for a malformed payload", async () => {
    const { run } = setup();
    expect(await run({ prompt: 42 })).toMatchObject({ kind: "failed", failure: { code: "unsupported_job" } });
  });

  it("answers offline jobs without any usage", async () => {
    const { run } = setup();
    const outcome = await run({ runtime: "offline", prompt: "status report" });
    expect(outcome).toMatchObject({ kind: "completed", result: { runtime: "offline", model: "offline" } });
    if (outcome.kind === "completed") {
      expect(outcome.result.text).toMatch(/^\[offline runtime\] status report/);
      expect(outcome.result).not.toHaveProperty("usage");
      expect(outcome.result).not.toHaveProperty("cost_usd");
    }
  });
});

describe("utility jobs on the other CLI runtimes (fakes)", () => {
  it.each([
    ["codex", "gpt-5.5", "codex"],
    ["antigravity", "gemini-2.5-flash", "gemini"],
    ["grok", "grok-4", "grok"],
  ] as const)("runs a %s job in its work dir and reports text, model and usage", async (runtime, model, cli) => {
    const { dir: home, cleanup } = tempDir();
    cleanups.push(cleanup);
    const log = join(home, "argv.jsonl");
    const outcome = await runUtilityJob(
      { job_id: `job-${runtime}`, payload: { runtime, prompt: "Summarise the week", model, timeout_ms: 20_000 } },
      {
        runtimes: runtimeTable({ [cli]: fakeClis[cli] }),
        home,
        signal: new AbortController().signal,
        env: { ...process.env, FAKE_ARGV_LOG: log },
      },
    );
    expect(outcome).toMatchObject({
      kind: "completed",
      result: { runtime, text: "FAKE_OK: Summarise the week", usage: { output_tokens: 10 } },
    });
    const call = JSON.parse(readFileSync(log, "utf8").trim());
    expect(call).toMatchObject({ cli, prompt: expect.stringContaining("Summarise the week") });
    expect(call.argv).not.toContain("Summarise the week");
    expect(call.cwd).toBe(workDirFor(home, `job-${runtime}`));
  });

  it("holds a codex evaluator to the acceptance schema with --output-schema and returns its JSON answer as the text", async () => {
    const { dir: home, cleanup } = tempDir();
    cleanups.push(cleanup);
    const log = join(home, "argv.jsonl");
    const prompt = [
      "# Role: evaluator",
      "Judge independently.",
      "",
      "## Acceptance criteria (frozen)",
      "1. notes/a.md exists",
      "2. notes/b.md exists",
      "",
      "<artifact_receipts>",
      "notes/a.md 6B sha256=3f2a1b2c… exists",
      "notes/b.md missing",
      "</artifact_receipts>",
    ].join("\n");
    const outcome = await runUtilityJob(
      { job_id: "job-eval", payload: { runtime: "codex", prompt, model: "gpt-5.5", timeout_ms: 20_000, output_schema: "acceptance" } },
      {
        runtimes: runtimeTable({ codex: fakeClis.codex }),
        home,
        signal: new AbortController().signal,
        env: { ...process.env, FAKE_ARGV_LOG: log },
      },
    );
    expect(outcome.kind).toBe("completed");
    if (outcome.kind !== "completed") return;
    expect(JSON.parse(outcome.result.text)).toEqual({
      criteria: [
        { id: 1, met: true, reason: expect.any(String) },
        { id: 2, met: false, reason: expect.stringContaining("notes/b.md missing") },
      ],
    });
    const call = JSON.parse(readFileSync(log, "utf8").trim());
    const schemaPath = call.argv[call.argv.indexOf("--output-schema") + 1];
    expect(schemaPath).toBe(join(workDirFor(home, "job-eval"), "acceptance.schema.json"));
    expect(JSON.parse(call.outputSchema)).toEqual(ACCEPTANCE_SCHEMA);
    expect(call.argv).not.toContain(prompt);
  });

  it("passes the verdict schema by name, and no schema at all when none is named", async () => {
    const { dir: home, cleanup } = tempDir();
    cleanups.push(cleanup);
    const log = join(home, "argv.jsonl");
    const ctx = {
      runtimes: runtimeTable({ codex: fakeClis.codex }),
      home,
      signal: new AbortController().signal,
      env: { ...process.env, FAKE_ARGV_LOG: log },
    };
    const base = { runtime: "codex", prompt: "judge it", timeout_ms: 20_000 };
    expect(await runUtilityJob({ job_id: "job-v", payload: { ...base, output_schema: "verdict" } }, ctx)).toMatchObject({
      kind: "completed",
      result: { text: JSON.stringify({ verdict: "PASS", reasons: ["fake"] }) },
    });
    await runUtilityJob({ job_id: "job-none", payload: base }, ctx);
    const [withSchema, without] = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(JSON.parse(withSchema.outputSchema)).toEqual(VERDICT_SCHEMA);
    expect(without.argv).not.toContain("--output-schema");
    expect(await runUtilityJob({ job_id: "job-bad", payload: { ...base, output_schema: "essay" } }, ctx)).toMatchObject({
      kind: "failed",
      failure: { code: "unsupported_job" },
    });
  });

  it("flags a codex verdict as recovered from the stream: turn.completed carries no text, the last agent_message is the answer", async () => {
    const { dir: home, cleanup } = tempDir();
    cleanups.push(cleanup);
    const verdict = JSON.stringify({ verdict: "FAIL", reasons: ["criterion 2 is not shown by the transcript"] });
    const outcome = await runUtilityJob(
      {
        job_id: "job-verdict",
        payload: { runtime: "codex", prompt: "## Transcript\n…\n## Criteria\n1. …", timeout_ms: 20_000, output_schema: "verdict" },
      },
      {
        runtimes: runtimeTable({ codex: fakeClis.codex }),
        home,
        signal: new AbortController().signal,
        env: { ...process.env, FAKE_OUTPUT_JSON: verdict },
      },
    );
    expect(outcome).toMatchObject({ kind: "completed", result: { runtime: "codex", text: verdict, message_recovered_from_stream: true } });
  });

  it("says so when the answer came from the stream's last message instead of the final event", async () => {
    const { dir: home, cleanup } = tempDir();
    cleanups.push(cleanup);
    // A stand-in claude that replays a recorded stream whose result event carries no text.
    const script = join(home, "replay-claude");
    writeFileSync(
      script,
      `#!/usr/bin/env node\nprocess.stdin.resume();\nprocess.stdin.on("end", () => process.stdout.write(require("fs").readFileSync(${JSON.stringify(join(claudeFixtures, "handoff.jsonl"))})));\n`,
      { mode: 0o755 },
    );
    const outcome = await runUtilityJob(
      { job_id: "job-recovered", payload: { runtime: "claude", prompt: "hand it off", timeout_ms: 20_000 } },
      { runtimes: runtimeTable({ claude: script }), home, signal: new AbortController().signal },
    );
    expect(outcome).toMatchObject({ kind: "completed", result: { text: "Handed off.", message_recovered_from_stream: true } });
  });

  it("prefers agy over gemini for antigravity when both are on PATH", () => {
    expect(runtimeTable(fakeClis).get("antigravity")).toMatchObject({ kind: "cli", executable: fakeClis.agy });
  });
});

describe("work dir", () => {
  it("keeps hostile job ids inside <home>/work", () => {
    expect(workDirFor("/h", "../../etc")).toBe("/h/work/.._.._etc");
    expect(workDirFor("/h", "..")).toBe("/h/work/__");
  });
});
