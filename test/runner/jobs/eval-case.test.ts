/**
 * The runner side of an `eval_case` job: one case, live, through the fake claude and codex as child
 * processes, in a fresh `<home>/eval/<job_id>/` seeded with the case's files, then the observe paths
 * read back as they are, and the dir gone whatever the ending.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EvalCaseResult } from "../../../local-runner/src/eval/result.ts";
import { evalDirFor, evalRootFor } from "../../../local-runner/src/eval/workspace.ts";
import { runEvalCaseJob } from "../../../local-runner/src/jobs/eval-case.ts";
import { runJob } from "../../../local-runner/src/jobs/index.ts";
import type { JobContext, JobOutcome } from "../../../local-runner/src/jobs/utility.ts";
import { CLI_RUNTIMES, runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import type { RuntimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../../local-runner/src/work-dir.ts";
import { fakeClaude, fakeCodex, fakeGrok, tempDir } from "../helpers/paths.ts";
import { expectAllDead, readFakePids, waitFor } from "../helpers/processes.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const PROMPT = "# Eval case writing/readme-basic\nWrite README.md that introduces the project named in brief.txt.";
const DEFAULT_NATIVE = "Read,Write,Edit,Bash,Glob,Grep,TodoWrite,WebFetch,WebSearch";

interface Call {
  cli: string;
  argv: string[];
  cwd: string;
  cwd_arg?: string;
  prompt: string;
  stdinClosed: boolean;
  config?: Record<string, unknown>;
}

function setup(env: Record<string, string> = {}, runtimes?: RuntimeTable) {
  const { dir: home, cleanup } = tempDir("crewplane-eval-");
  cleanups.push(cleanup);
  const argvLog = join(home, "argv.jsonl");
  const controller = new AbortController();
  const ctx: JobContext = {
    runtimes: runtimes ?? runtimeTable({ claude: fakeClaude, codex: fakeCodex, grok: fakeGrok }),
    home,
    signal: controller.signal,
    env: { ...process.env, FAKE_ARGV_LOG: argvLog, ...env },
    killGraceMs: 1000,
  };
  const run = (payload: Record<string, unknown> = {}, jobId = `job-${Math.random().toString(36).slice(2)}`): Promise<JobOutcome> =>
    runEvalCaseJob({ job_id: jobId, payload: { ...basePayload(), ...payload } }, ctx);
  const calls = (): Call[] =>
    existsSync(argvLog)
      ? readFileSync(argvLog, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Call)
      : [];
  /** What is left under <home>/eval/ (nothing, once every job ended). */
  const leftovers = (): string[] => (existsSync(evalRootFor(home)) ? readdirSync(evalRootFor(home)) : []);
  return { home, ctx, controller, run, calls, leftovers };
}

function basePayload() {
  return {
    runtime: "claude",
    model: "claude-sonnet-5-5",
    run_id: "evrun_1",
    case_id: "readme-basic",
    domain: "writing",
    employee_id: "emp_1",
    prompt: PROMPT,
    workspace_files: { "brief.txt": "Project: Lantern\n", "docs/old.md": "old notes\n" },
    observe_paths: ["README.md", "brief.txt", "docs/old.md", "missing.md"],
    timeout_ms: 30_000,
  };
}

const resultOf = (outcome: JobOutcome): EvalCaseResult => {
  if (outcome.kind !== "completed") throw new Error(`eval case did not complete: ${JSON.stringify(outcome)}`);
  return outcome.result as unknown as EvalCaseResult;
};

const README = JSON.stringify({ "README.md": "# Lantern\n" });

describe("an eval_case job on the fake claude", () => {
  it("runs in a fresh seeded dir, reports each observe path's content or null, and removes the dir", async () => {
    const { run, calls, home, leftovers } = setup({ FAKE_EVAL_WRITE_FILES: README, FAKE_EVAL_ANSWER_TEXT: "Wrote README.md." });
    const result = resultOf(await run({}, "job-claude"));

    expect(result).toEqual({
      text: "Wrote README.md.",
      runtime: "claude",
      model: "claude-sonnet-5-5",
      provider: "anthropic",
      session_id: "fa4e0000-0000-4000-8000-000000000001",
      duration_ms: expect.any(Number),
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 },
      cost_usd: 0.0001,
      exit_status: 0,
      files: { "README.md": "# Lantern\n", "brief.txt": "Project: Lantern\n", "docs/old.md": "old notes\n", "missing.md": null },
      evidence: { native_tool_events: 1 },
      tool_activity: [{ name: "Write", ok: 1, err: 0 }],
    });
    const [call] = calls();
    expect(call!.cwd).toBe(evalDirFor(home, "job-claude"));
    expect(leftovers()).toEqual([]);
    // The raw output went to the work dir, never into the case's dir.
    expect(readFileSync(join(workDirFor(home, "job-claude"), "stream.jsonl"), "utf8")).toContain('"type":"result"');
  });

  it("passes the default employee tools without any crewplane tool, no MCP server at all, and the prompt on stdin only", async () => {
    const { run, calls } = setup();
    await run({ effort: "high" });
    const [call] = calls();
    const argv = call!.argv;
    expect(argv[argv.indexOf("--tools") + 1]).toBe(DEFAULT_NATIVE);
    expect(argv[argv.indexOf("--allowedTools") + 1]).toBe(DEFAULT_NATIVE);
    expect(argv.join(" ")).not.toContain("mcp__crewplane");
    expect(argv).toContain("--strict-mcp-config");
    expect(argv).not.toContain("--mcp-config");
    expect(argv).not.toContain("--append-system-prompt-file");
    expect(argv[argv.indexOf("--effort") + 1]).toBe("high");
    expect(argv.some((a) => a.includes("Eval case") || a.includes("README"))).toBe(false);
    expect(call).toMatchObject({ prompt: PROMPT, stdinClosed: true });
  });

  it("applies the payload's tools: a Write it does not grant is denied and the file stays absent", async () => {
    const { run, calls } = setup({ FAKE_EVAL_WRITE_FILES: README });
    const result = resultOf(await run({ tools: { allowed_tools: ["Read", "Grep", "mcp__crewplane__*"], denied_tools: ["Grep"] } }));
    const argv = calls()[0]!.argv;
    expect(argv[argv.indexOf("--tools") + 1]).toBe("Read");
    expect(argv[argv.indexOf("--allowedTools") + 1]).toBe("Read");
    expect(argv[argv.indexOf("--disallowedTools") + 1]).toBe("Grep");
    expect(result.files["README.md"]).toBeNull();
    expect(result.tool_activity).toEqual([{ name: "Write", ok: 0, err: 1 }]);
    expect(result.text).toBe("Done.");
  });

  it("works in the team scenario too, and a case-specific setting wins over the general one", async () => {
    const { run } = setup({
      FAKE_SCENARIO: "team",
      FAKE_EVAL_WRITE_FILES: JSON.stringify({ "README.md": "general\n" }),
      FAKE_EVAL_WRITE_FILES_README_BASIC: JSON.stringify({ "README.md": "case readme-basic\n" }),
      FAKE_CLAUDE_EVAL_ANSWER_TEXT_README_BASIC: "claude on readme-basic",
    });
    const result = resultOf(await run());
    expect(result.files["README.md"]).toBe("case readme-basic\n");
    expect(result.text).toBe("claude on readme-basic");
    const other = resultOf(await run({ case_id: "readme.other", prompt: "# Eval case writing/readme.other\nWrite it." }));
    expect(other.files["README.md"]).toBe("general\n");
    expect(other.text).toBe("Done.");
  });

  it("reports an observe path that leads out of the dir as null and unreadable, and never reads it", async () => {
    const { run, home } = setup();
    // <home>/eval/<job>/../../argv.jsonl is the fake's log: there, readable, and not the case's.
    const result = resultOf(await run({ observe_paths: ["../../argv.jsonl", "/etc/hostname", "docs", "brief.txt"] }));
    expect(existsSync(join(home, "argv.jsonl"))).toBe(true);
    expect(result.files).toEqual({ "../../argv.jsonl": null, "/etc/hostname": null, docs: null, "brief.txt": "Project: Lantern\n" });
    expect(result.unreadable_files).toEqual(["../../argv.jsonl", "/etc/hostname", "docs"]);
    expect(result.truncated_files).toBeUndefined();
  });

  it("fails classified as any CLI call, naming what ran, and still removes the dir", async () => {
    const { run, leftovers } = setup({ FAKE_SCENARIO: "fail" });
    const outcome = await run();
    expect(outcome).toMatchObject({
      kind: "failed",
      failure: { code: "not_logged_in", retryable: false, ran: { runtime: "claude", provider: "anthropic" } },
    });
    if (outcome.kind === "failed") expect(outcome.failure.message).toContain("claude (model claude-sonnet-5-5)");
    expect(leftovers()).toEqual([]);
  });

  it("removes the dir and leaves nothing running when the runner aborts the job", async () => {
    const { run, controller, home, leftovers } = setup({ FAKE_SCENARIO: "hang" });
    const pending = run({}, "job-abort");
    const pids = await waitFor(() => readFakePids(evalDirFor(home, "job-abort")), "the fake's pids in the eval dir");
    controller.abort();
    expect(await pending).toEqual({ kind: "aborted" });
    await expectAllDead(pids);
    expect(leftovers()).toEqual([]);
  });

  it("removes the dir when the run throws", async () => {
    const { home, leftovers } = setup();
    const throwing: RuntimeTable = new Map([
      [
        "claude",
        {
          kind: "cli",
          name: "claude",
          executable: fakeClaude,
          adapter: {
            ...CLI_RUNTIMES.find((r) => r.command === "claude")!,
            buildInvocation: () => {
              throw new Error("adapter exploded");
            },
          },
        },
      ],
    ]);
    await expect(
      runEvalCaseJob({ job_id: "job-throw", payload: basePayload() }, { runtimes: throwing, home, signal: new AbortController().signal }),
    ).rejects.toThrow("adapter exploded");
    expect(leftovers()).toEqual([]);
  });
});

describe("an eval_case job on the fake codex", () => {
  it("runs with workspace-write for the default tools, no MCP server, the prompt on stdin, and flags the recovered message", async () => {
    const { run, calls, home, leftovers } = setup({ FAKE_EVAL_WRITE_FILES: README });
    const result = resultOf(await run({ runtime: "codex", model: "gpt-5.5" }, "job-codex"));
    expect(result).toMatchObject({
      text: "Done.",
      runtime: "codex",
      provider: "openai",
      exit_status: 0,
      message_recovered_from_stream: true,
      files: { "README.md": "# Lantern\n", "brief.txt": "Project: Lantern\n", "missing.md": null },
      tool_activity: [
        { name: "command_execution", ok: 1, err: 0 },
        { name: "file_change", ok: 1, err: 0 },
      ],
    });
    expect(result.model).toBeUndefined(); // codex's stream never names its model
    const [call] = calls();
    expect(call!.cwd_arg).toBe(evalDirFor(home, "job-codex"));
    expect(call!.argv[call!.argv.indexOf("-s") + 1]).toBe("workspace-write");
    expect(call!.argv.at(-1)).toBe("-");
    expect(call!.config).not.toHaveProperty("mcp_servers");
    expect(call!.argv.some((a) => a.includes("Eval case"))).toBe(false);
    expect(call!.prompt).toBe(PROMPT);
    expect(leftovers()).toEqual([]);
  });

  it("runs read-only when no write tool remains, so the case's file is never written", async () => {
    const { run, calls } = setup({ FAKE_SCENARIO: "team", FAKE_EVAL_WRITE_FILES: README });
    const result = resultOf(await run({ runtime: "codex", tools: { allowed_tools: ["Read", "Write"], denied_tools: ["Write"] } }));
    expect(calls()[0]!.argv[calls()[0]!.argv.indexOf("-s") + 1]).toBe("read-only");
    expect(result.files["README.md"]).toBeNull();
    expect(result.tool_activity).toContainEqual({ name: "file_change", ok: 0, err: 1 });
  });

  it("lets FAKE_CODEX_EVAL_WRITE_FILES_<CASE> win over FAKE_EVAL_WRITE_FILES_<CASE>", async () => {
    const { run } = setup({
      FAKE_EVAL_WRITE_FILES_README_BASIC: JSON.stringify({ "README.md": "any cli\n" }),
      FAKE_CODEX_EVAL_WRITE_FILES_README_BASIC: JSON.stringify({ "README.md": "codex only\n" }),
    });
    expect(resultOf(await run({ runtime: "codex" })).files["README.md"]).toBe("codex only\n");
    expect(resultOf(await run({ runtime: "claude" })).files["README.md"]).toBe("any cli\n");
  });
});

describe("an eval_case job on the fake grok", () => {
  it("keeps its prompt file in the work dir, out of the case's dir and out of argv", async () => {
    const { run, calls, home } = setup({ FAKE_EVAL_WRITE_FILES: README });
    const result = resultOf(await run({ runtime: "grok", observe_paths: ["README.md", "prompt.md"] }, "job-grok"));
    expect(result.files["README.md"]).toBe("# Lantern\n");
    expect(Object.values(result.files).filter((c) => c?.includes("Eval case"))).toEqual([]);
    const argv = calls()[0]!.argv;
    const promptFile = argv[argv.indexOf("--prompt-file") + 1]!;
    expect(promptFile.startsWith(workDirFor(home, "job-grok"))).toBe(true);
    expect(argv.some((a) => a.includes("Eval case"))).toBe(false);
  });
});

describe("an eval_case job on the offline runtime", () => {
  it("answers, changes nothing, reports the seeded files as they are and exit_status null", async () => {
    const { run, calls, leftovers } = setup({ FAKE_EVAL_WRITE_FILES: README });
    const result = resultOf(await run({ runtime: "offline", model: null }));
    expect(result).toEqual({
      text: expect.stringMatching(/^\[offline runtime\] # Eval case writing\/readme-basic \(sha256:/),
      runtime: "offline",
      model: "offline",
      duration_ms: expect.any(Number),
      exit_status: null,
      files: { "README.md": null, "brief.txt": "Project: Lantern\n", "docs/old.md": "old notes\n", "missing.md": null },
      evidence: { native_tool_events: 0 },
      tool_activity: [],
    });
    expect(calls()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it("is what runJob dispatches an eval_case job to", async () => {
    const { ctx } = setup();
    const outcome = await runJob(
      {
        job_id: "job-d",
        lease_id: "l",
        lease_expires_at: new Date().toISOString(),
        kind: "eval_case",
        attempt: 0,
        payload: { ...basePayload(), runtime: "offline" },
      },
      ctx,
    );
    expect(resultOf(outcome).runtime).toBe("offline");
  });
});

describe("eval_case payloads", () => {
  it.each([
    ["climbs out with ..", { "../escape.txt": "x" }],
    ["climbs out through a subdirectory", { "a/../../escape.txt": "x" }],
    ["is absolute", { "/tmp/escape.txt": "x" }],
    ["names the dir itself", { ".": "x" }],
    ["names a directory", { "docs/": "x" }],
  ])("refuses a workspace file that %s as unsupported_job, writing and running nothing", async (_label, files) => {
    const { run, calls, leftovers } = setup();
    const outcome = await run({ workspace_files: { "ok.txt": "fine", ...files } });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    if (outcome.kind === "failed") expect(outcome.failure.message).toContain(JSON.stringify(Object.keys(files)[0]));
    expect(calls()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it("refuses seed paths that cannot both be written as unsupported_job and removes what was written", async () => {
    const { run, calls, leftovers } = setup();
    const outcome = await run({ workspace_files: { a: "file", "a/b": "needs a to be a directory" } });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    expect(calls()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it.each([
    ["no case id", { case_id: undefined }],
    ["an unknown runtime", { runtime: "gpt-cli" }],
    ["more than 64 observe paths", { observe_paths: Array.from({ length: 65 }, (_, i) => `f${i}.md`) }],
    ["workspace files that are not strings", { workspace_files: { "a.md": 1 } }],
    ["no timeout", { timeout_ms: undefined }],
    ["an unknown effort", { effort: "extreme" }],
  ])("fails a payload with %s as unsupported_job, not retryable", async (_label, patch) => {
    const { run, calls } = setup();
    expect(await run(patch)).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    expect(calls()).toEqual([]);
  });

  it("fails a runtime this runner does not offer as unsupported_job", async () => {
    const { run } = setup({}, runtimeTable({ claude: fakeClaude }));
    expect(await run({ runtime: "antigravity" })).toMatchObject({ kind: "failed", failure: { code: "unsupported_job" } });
  });
});
