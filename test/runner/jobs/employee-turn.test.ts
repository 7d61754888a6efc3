/**
 * The runner side of an `employee_turn` job: the employee's own CLI (the fake claude and codex, as
 * child processes) in its workspace, with its tools and the prompt on stdin, then what the run changed
 * there as receipts the Worker's own result schema reads.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runEmployeeTurnJob } from "../../../local-runner/src/jobs/employee-turn.ts";
import type { JobContext, JobOutcome } from "../../../local-runner/src/jobs/utility.ts";
import type { EmployeeTurnResult } from "../../../local-runner/src/members/turn-result.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../../local-runner/src/work-dir.ts";
import { fakeClaude, fakeCodex, fakeGrok, tempDir } from "../helpers/paths.ts";
import { expectAllDead, readFakePids, waitFor } from "../helpers/processes.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const PROMPT = "# Goal round 1 for Aiko\nYou are Aiko. Work on the task below yourself.\n\n## Task\nWrite the onboarding notes";

interface Call {
  cli: string;
  argv: string[];
  cwd: string;
  prompt: string;
  stdinClosed: boolean;
}

function setup(env: Record<string, string> = {}) {
  const { dir: home, cleanup } = tempDir("crewplane-turn-");
  cleanups.push(cleanup);
  const argvLog = join(home, "argv.jsonl");
  const controller = new AbortController();
  const ctx: JobContext = {
    runtimes: runtimeTable({ claude: fakeClaude, codex: fakeCodex }),
    home,
    signal: controller.signal,
    env: { ...process.env, FAKE_SCENARIO: "team", FAKE_ARGV_LOG: argvLog, ...env },
    killGraceMs: 1000,
  };
  const workspace = join(home, "agents", "emp_1");
  const run = (payload: Record<string, unknown> = {}, jobId = `job-${Math.random().toString(36).slice(2)}`): Promise<JobOutcome> =>
    runEmployeeTurnJob({ job_id: jobId, payload: { ...basePayload(), ...payload } }, ctx);
  const calls = (): Call[] =>
    existsSync(argvLog)
      ? readFileSync(argvLog, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Call)
      : [];
  return { home, workspace, controller, run, calls };
}

function basePayload() {
  return {
    runtime: "claude",
    model: "claude-sonnet-5-5",
    employee_id: "emp_1",
    employee: {
      name: "Aiko",
      capabilities: { allowed_tools: ["Read", "Write", "Edit", "Glob"], denied_tools: ["WebFetch"] },
      sandbox_enabled: false,
    },
    purpose: "goal_round",
    task_id: "task_1",
    round_id: "trnd_1",
    round: 1,
    stage_id: "stg_work",
    prompt: PROMPT,
    timeout_ms: 30_000,
  };
}

const resultOf = (outcome: JobOutcome): EmployeeTurnResult => {
  if (outcome.kind !== "completed") throw new Error(`turn did not complete: ${JSON.stringify(outcome)}`);
  return outcome.result as unknown as EmployeeTurnResult;
};

/** The Worker's stage result schema (src/jobs/team-stage-job.ts), which reads a loop stage's result too. */
async function workerStageResult() {
  const path = "../../../src/jobs/team-stage-job.ts";
  const { teamStageResult } = (await import(/* @vite-ignore */ path)) as {
    teamStageResult: { safeParse(v: unknown): { success: boolean; data?: any; error?: unknown } };
  };
  return teamStageResult;
}

describe("an employee_turn job on the fake claude", () => {
  it("runs the employee in its workspace and reports the files it wrote as exists receipts with their bytes and sha256", async () => {
    const files = { "notes/a.md": "alpha\n", "notes/b.md": "beta beta\n" };
    const { run, calls, workspace } = setup({ FAKE_WRITE_FILES: JSON.stringify(files) });
    const result = resultOf(await run());

    expect(result).toMatchObject({
      text: "Done: notes/a.md, notes/b.md",
      runtime: "claude",
      provider: "anthropic",
      model: "claude-sonnet-5-5",
      session_id: "fa4e0000-0000-4000-8000-000000000001",
      usage: { input_tokens: 10, output_tokens: 5 },
      cost_usd: 0.0001,
      evidence: { native_tool_events: 2 },
      tool_activity: [{ name: "Write", ok: 2, err: 0 }],
      workspace: { scan: "full", created: 2, modified: 0, deleted: 0, truncated: false },
    });
    expect(result.artifact_receipts).toEqual([
      { path: "notes/a.md", state: "exists", bytes: 6, sha256: sha256("alpha\n") },
      { path: "notes/b.md", state: "exists", bytes: 10, sha256: sha256("beta beta\n") },
    ]);
    expect(readFileSync(join(workspace, "notes/b.md"), "utf8")).toBe("beta beta\n");
    const [call] = calls();
    expect(call!.cwd).toBe(workspace);

    const parsed = (await workerStageResult()).safeParse(JSON.parse(JSON.stringify(result)));
    expect(parsed.success, JSON.stringify(parsed.error)).toBe(true);
    expect(parsed.data).toMatchObject({ text: result.text, artifact_receipts: result.artifact_receipts, provider: "anthropic" });
  });

  it("passes the employee's tools (minus its deny list) and identity, no MCP config, and the prompt on stdin only", async () => {
    const { run, calls, home } = setup();
    await run({ employee: { ...basePayload().employee, identity: "I am Aiko, the onboarding writer." } }, "job-argv");
    const [call] = calls();
    const argv = call!.argv;
    expect(argv[argv.indexOf("--tools") + 1]).toBe("Read,Write,Edit,Glob");
    expect(argv[argv.indexOf("--allowedTools") + 1]).toBe("Read,Write,Edit,Glob");
    expect(argv[argv.indexOf("--disallowedTools") + 1]).toBe("WebFetch");
    expect(argv).not.toContain("--mcp-config");
    expect(argv.some((a) => a.includes("Goal round"))).toBe(false);
    expect(call).toMatchObject({ prompt: PROMPT, stdinClosed: true });
    const identity = argv[argv.indexOf("--append-system-prompt-file") + 1]!;
    expect(identity.startsWith(workDirFor(home, "job-argv"))).toBe(true);
    expect(readFileSync(identity, "utf8")).toContain("I am Aiko, the onboarding writer.");
  });

  it("reports a re-check path deleted since an earlier round as missing, ahead of this round's own files", async () => {
    const { run, workspace } = setup({
      FAKE_WRITE_FILES_ROUND_1: JSON.stringify({ "notes/a.md": "round one\n" }),
      FAKE_WRITE_FILES_ROUND_2: JSON.stringify({ "notes/b.md": "round two\n" }),
    });
    const first = resultOf(await run());
    expect(first.artifact_receipts).toEqual([{ path: "notes/a.md", state: "exists", bytes: 10, sha256: sha256("round one\n") }]);

    rmSync(join(workspace, "notes/a.md"));
    const second = resultOf(
      await run({ round: 2, prompt: PROMPT.replace("Goal round 1", "Goal round 2"), recheck_paths: ["notes/a.md", "../../etc/passwd"] }),
    );
    expect(second.text).toBe("Done: notes/b.md");
    expect(second.artifact_receipts).toEqual([
      { path: "notes/a.md", state: "missing" },
      { path: "../../etc/passwd", state: "outside_workspace", reason: "escapes_workspace" },
      { path: "notes/b.md", state: "exists", bytes: 10, sha256: sha256("round two\n") },
    ]);
    // Deleted before this run started: not one of this run's changes.
    expect(second.workspace).toMatchObject({ created: 1, deleted: 0, changes: [{ path: "notes/b.md", change: "created" }] });
  });

  it("fails sandbox_unavailable (not retryable) for a sandboxed employee, spawning nothing", async () => {
    const { run, calls } = setup();
    const outcome = await run({ employee: { ...basePayload().employee, sandbox_enabled: true } });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "sandbox_unavailable", retryable: false } });
    if (outcome.kind === "failed") expect(outcome.failure.message).toMatch(/codex/);
    expect(calls()).toEqual([]);
  });

  it("reports a CLI failure with what ran, naming runtime and model", async () => {
    const { run } = setup({ FAKE_SCENARIO: "fail" });
    const outcome = await run();
    expect(outcome).toMatchObject({
      kind: "failed",
      failure: { code: "not_logged_in", retryable: false, ran: { runtime: "claude", provider: "anthropic", model: "claude-sonnet-5-5" } },
    });
    if (outcome.kind === "failed") expect(outcome.failure.message).toContain("claude (model claude-sonnet-5-5)");
  });

  it("returns aborted and kills the CLI's process group when the runner stops the job", async () => {
    const { run, controller, workspace } = setup({ FAKE_SCENARIO: "hang" });
    const pending = run({ timeout_ms: 60_000 });
    const pids = await waitFor(() => readFakePids(workspace), "the fake to record its pids");
    controller.abort();
    expect(await pending).toEqual({ kind: "aborted" });
    await expectAllDead(pids);
  });
});

describe("an employee_turn job on the fake codex", () => {
  it("runs codex workspace-write in the workspace when a write tool is allowed, even for a sandboxed employee", async () => {
    const { run, calls, workspace } = setup({ FAKE_CODEX_WRITE_FILES: JSON.stringify({ "report.md": "# Report\n" }) });
    const result = resultOf(
      await run({ runtime: "codex", model: "gpt-5.5", effort: "high", employee: { ...basePayload().employee, sandbox_enabled: true } }),
    );
    expect(result).toMatchObject({
      runtime: "codex",
      provider: "openai",
      text: "Done: report.md",
      effort: { requested: "high", applied: "high" },
      workspace: { created: 1 },
    });
    expect(result).not.toHaveProperty("model"); // codex's stream never names the model
    expect(result.artifact_receipts).toEqual([{ path: "report.md", state: "exists", bytes: 9, sha256: sha256("# Report\n") }]);
    const [call] = calls();
    expect(call!.argv).toEqual(expect.arrayContaining(["--cd", workspace, "-s", "workspace-write", "-m", "gpt-5.5"]));
    expect(call!.argv.at(-1)).toBe("-");
    expect(call!.argv.some((a) => a.includes("Goal round"))).toBe(false);
    expect(call!.prompt).toBe(PROMPT);
  });

  it("runs codex read-only for an employee without write tools: its writes are refused and nothing is reported as written", async () => {
    const { run, calls } = setup({ FAKE_CODEX_WRITE_FILES: JSON.stringify({ "report.md": "x" }) });
    const result = resultOf(
      await run({
        runtime: "codex",
        model: "gpt-5.5",
        employee: { name: "Aiko", capabilities: { allowed_tools: ["Read", "Grep"], denied_tools: [] } },
      }),
    );
    expect(calls()[0]!.argv).toEqual(expect.arrayContaining(["-s", "read-only"]));
    expect(result.artifact_receipts).toEqual([]);
    expect(result.workspace).toMatchObject({ created: 0, modified: 0, deleted: 0 });
    expect(result.tool_activity).toContainEqual({ name: "file_change", ok: 0, err: 1 });
  });
});

describe("an employee_turn job on the fake grok", () => {
  it("keeps grok's prompt file in the job's work dir, so the only workspace change is what the employee wrote", async () => {
    const { dir: home, cleanup } = tempDir("crewplane-turn-");
    cleanups.push(cleanup);
    const outcome = await runEmployeeTurnJob(
      { job_id: "job-grok", payload: { ...basePayload(), runtime: "grok", model: "grok-4" } },
      {
        runtimes: runtimeTable({ grok: fakeGrok }),
        home,
        signal: new AbortController().signal,
        env: { ...process.env, FAKE_SCENARIO: "team", FAKE_GROK_WRITE_FILES: JSON.stringify({ "plan.md": "p\n" }) },
      },
    );
    const result = resultOf(outcome);
    expect(result).toMatchObject({ runtime: "grok", provider: "xai", text: "Done: plan.md", workspace: { created: 1 } });
    expect(result.artifact_receipts).toEqual([{ path: "plan.md", state: "exists", bytes: 2, sha256: sha256("p\n") }]);
    expect(existsSync(join(workDirFor(home, "job-grok"), "prompt.md"))).toBe(true);
  });
});

describe("an employee_turn job on the offline runtime", () => {
  it("answers, changes nothing, and still reports the full scan and the re-check paths honestly", async () => {
    const { run, workspace, calls } = setup();
    mkdirSync(join(workspace, "notes"), { recursive: true });
    writeFileSync(join(workspace, "notes/a.md"), "kept\n");
    const result = resultOf(await run({ runtime: "offline", model: "offline", recheck_paths: ["notes/a.md"] }));
    expect(result).toEqual({
      text: expect.stringMatching(/^\[offline runtime\] # Goal round 1 for Aiko/),
      runtime: "offline",
      model: "offline",
      duration_ms: expect.any(Number),
      artifact_receipts: [{ path: "notes/a.md", state: "exists", bytes: 5, sha256: sha256("kept\n") }],
      workspace: { scan: "full", created: 0, modified: 0, deleted: 0, truncated: false, changes: [] },
      evidence: { native_tool_events: 0 },
      tool_activity: [],
    });
    expect(calls()).toEqual([]);
  });

  it("creates a missing workspace and reports an empty full scan", async () => {
    const { run, workspace } = setup();
    const result = resultOf(await run({ runtime: "offline", model: "offline" }));
    expect(existsSync(workspace)).toBe(true);
    expect(result).toMatchObject({ artifact_receipts: [], workspace: { scan: "full", created: 0 } });
  });
});

describe("employee_turn payloads", () => {
  it("refuses a malformed payload, an unsafe employee id and a runtime this runner lacks as unsupported_job", async () => {
    const { run, home } = setup();
    expect(await run({ prompt: 42 })).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    expect(await run({ employee_id: "../escape" })).toMatchObject({ kind: "failed", failure: { code: "unsupported_job" } });
    expect(existsSync(join(home, "escape"))).toBe(false);
    const grok = await run({ runtime: "grok", model: "grok-4" });
    expect(grok).toMatchObject({ kind: "failed", failure: { code: "unsupported_job" } });
    if (grok.kind === "failed") expect(grok.failure.message).toContain("grok (model grok-4)");
  });

  it("runs the payload the Worker's own schema builds", async () => {
    const path = "../../../src/jobs/payloads.ts";
    const { employeeTurnPayload } = (await import(/* @vite-ignore */ path)) as { employeeTurnPayload: { parse(v: unknown): unknown } };
    const { home } = setup();
    const payload = employeeTurnPayload.parse({ ...basePayload(), runtime: "offline", model: "offline", recheck_paths: ["a.md"] });
    const outcome = await runEmployeeTurnJob(
      { job_id: "job-worker", payload },
      { runtimes: runtimeTable(), home, signal: new AbortController().signal },
    );
    expect(outcome).toMatchObject({
      kind: "completed",
      result: { runtime: "offline", artifact_receipts: [{ path: "a.md", state: "missing" }] },
    });
  });
});
