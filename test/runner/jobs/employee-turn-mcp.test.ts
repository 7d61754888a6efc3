/**
 * The employee's own crewplane MCP server in an `employee_turn` (issue 21 item 5): with a usable
 * `employee_token` the fake claude and codex start the real server from an identity file in the
 * job's work dir and call `evolution_status` on a fake Worker; without one (none, `[redacted]`) the
 * run is what it was before. The token never reaches argv, the result or the workspace, and the
 * identity file is gone when the job ends.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runEmployeeTurnJob } from "../../../local-runner/src/jobs/employee-turn.ts";
import type { JobContext, JobOutcome } from "../../../local-runner/src/jobs/utility.ts";
import { EMPLOYEE_IDENTITY_FILE, EMPLOYEE_MCP_CONFIG_FILE } from "../../../local-runner/src/members/employee-mcp.ts";
import { MEMBER_CONFIG_ENV } from "../../../local-runner/src/members/scaffold.ts";
import type { EmployeeTurnResult } from "../../../local-runner/src/members/turn-result.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../../local-runner/src/work-dir.ts";
import { startFakeEvolutionApi } from "../helpers/fake-evolution-api.ts";
import type { FakeEvolutionApi } from "../helpers/fake-evolution-api.ts";
import { fakeClaude, fakeCodex, fakeGrok, tempDir } from "../helpers/paths.ts";
import { readFakePids, waitFor } from "../helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

const PROMPT = "# Goal round 1 for Aiko\nYou are Aiko. Work on the task below yourself.\n\n## Task\nCheck your evolution engine";

interface Call {
  cli: string;
  argv: string[];
  cwd: string;
  prompt: string;
  config?: { mcp_servers?: Record<string, { command: string; env: Record<string, string>; enabled_tools?: string[] }> };
}

async function setup(env: Record<string, string> = {}, options: { apiUrl?: boolean } = {}) {
  const api = await startFakeEvolutionApi();
  teardown.push(() => api.close());
  const { dir: home, cleanup } = tempDir("crewplane-turn-mcp-");
  teardown.push(cleanup);
  const argvLog = join(home, "argv.jsonl");
  const controller = new AbortController();
  const token = api.mint("emp_1");
  const ctx: JobContext = {
    runtimes: runtimeTable({ claude: fakeClaude, codex: fakeCodex, grok: fakeGrok }),
    home,
    signal: controller.signal,
    env: { ...process.env, FAKE_SCENARIO: "team", FAKE_ARGV_LOG: argvLog, FAKE_MCP_CALLS: "evolution_status", ...env },
    killGraceMs: 1000,
    ...(options.apiUrl === false ? {} : { apiUrl: api.url }),
  };
  const workspace = join(home, "agents", "emp_1");
  const run = (payload: Record<string, unknown> = {}, jobId = "job-1"): Promise<JobOutcome> =>
    runEmployeeTurnJob({ job_id: jobId, payload: { ...basePayload(token), ...payload } }, ctx);
  const calls = (): Call[] =>
    existsSync(argvLog)
      ? readFileSync(argvLog, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Call)
      : [];
  return { api, ctx, home, workspace, token, controller, run, calls, workDir: (jobId = "job-1") => workDirFor(home, jobId) };
}

function basePayload(token: string) {
  return {
    runtime: "claude",
    model: "claude-sonnet-5-5",
    employee_id: "emp_1",
    // No allow-list: the default set, whose `mcp__crewplane__*` gives the employee its two tools.
    employee: { name: "Aiko", sandbox_enabled: false },
    purpose: "conversation",
    prompt: PROMPT,
    timeout_ms: 30_000,
    employee_token: token,
    employee_token_expires_at: "2099-01-01T00:00:00.000Z",
  };
}

const resultOf = (outcome: JobOutcome): EmployeeTurnResult => {
  if (outcome.kind !== "completed") throw new Error(`turn did not complete: ${JSON.stringify(outcome)}`);
  return outcome.result as unknown as EmployeeTurnResult;
};

const evolutionCalls = (api: FakeEvolutionApi, token: string) =>
  api.requests.map((r) => `${r.method} ${r.path}${r.authorization === `Bearer ${token}` ? " (employee token)" : ""}`);

describe("an employee_turn with a usable employee token, on the fake claude", () => {
  it("gives claude its own MCP config from the work dir, and evolution_status makes a real round trip to the Worker", async () => {
    const { api, token, run, calls, workDir, workspace } = await setup({ FAKE_WRITE_FILES: JSON.stringify({ "notes.md": "n\n" }) });
    const result = resultOf(await run());

    const [call] = calls();
    const argv = call!.argv;
    const config = argv[argv.indexOf("--mcp-config") + 1]!;
    expect(config).toBe(join(workDir(), EMPLOYEE_MCP_CONFIG_FILE));
    expect(argv).toContain("--strict-mcp-config");
    expect(argv[argv.indexOf("--allowedTools") + 1]!.split(",")).toEqual(
      expect.arrayContaining(["mcp__crewplane__evolution_status", "mcp__crewplane__evolution_toggle"]),
    );
    expect(argv.join(" ")).not.toContain("team_handoff");
    expect(argv.join(" ")).not.toContain(token);

    expect(evolutionCalls(api, token)).toEqual(["GET /v1/employees/emp_1/evolution (employee token)"]);
    expect(result.tool_activity).toEqual(
      expect.arrayContaining([
        { name: "Write", ok: 1, err: 0 },
        { name: "mcp__crewplane__evolution_status", ok: 1, err: 0 },
      ]),
    );
    expect(result.text).toMatch(/^Done: notes\.md\n\nevolution_status ok: .*"employee_id": "emp_1"/);
    expect(JSON.stringify(result)).not.toContain(token);

    // The workspace holds what the employee wrote and nothing of the server's.
    expect(result.workspace).toMatchObject({ created: 1, modified: 0, deleted: 0 });
    expect(result.artifact_receipts.map((r) => r.path)).toEqual(["notes.md"]);
    expect(readdirSync(workspace)).toEqual(["notes.md"]);
    // The identity and its MCP config are gone once the job is over; the call log stays.
    expect(existsSync(join(workDir(), EMPLOYEE_IDENTITY_FILE))).toBe(false);
    expect(existsSync(config)).toBe(false);
  });

  it("reports a toggle the Worker refuses as a failed tool call the employee sees (prompt marker with arguments)", async () => {
    const { api, token, run } = await setup({ FAKE_MCP_CALLS: "" });
    const prompt = `${PROMPT}\n[[fake-call:evolution_toggle {"key":"cognitive_memory","value":false}]]`;
    const result = resultOf(await run({ prompt }));
    expect(evolutionCalls(api, token)).toEqual(["POST /v1/employees/emp_1/evolution/toggle (employee token)"]);
    expect(api.requests[0]!.body).toEqual({ key: "cognitive_memory", value: false });
    expect(result.tool_activity).toContainEqual({ name: "mcp__crewplane__evolution_toggle", ok: 0, err: 1 });
    expect(result.text).toContain("evolution_toggle error: crewplane refused the call (422 validation_failed)");
    expect(result.text).toContain("reason: not_toggleable");
  });

  it("masks the token should the run's own answer carry it", async () => {
    const { token, run, ctx } = await setup({ FAKE_SCENARIO: "success" });
    // The success scenario answers FAKE_ANSWER verbatim; a model could echo anything it saw.
    ctx.env = { ...ctx.env, FAKE_ANSWER: `the key is ${token}` };
    expect(resultOf(await run()).text).toBe("the key is [masked]");
  });

  it("removes the identity file when the CLI fails, and when the runner stops the job", async () => {
    const failing = await setup({ FAKE_SCENARIO: "fail" });
    expect(await failing.run()).toMatchObject({ kind: "failed", failure: { code: "not_logged_in" } });
    expect(failing.calls()[0]!.argv).toContain("--mcp-config");
    expect(existsSync(join(failing.workDir(), EMPLOYEE_IDENTITY_FILE))).toBe(false);

    const hanging = await setup({ FAKE_SCENARIO: "hang" });
    const pending = hanging.run({ timeout_ms: 60_000 }, "job-hang");
    await waitFor(() => readFakePids(hanging.workspace), "the fake to record its pids");
    expect(existsSync(join(hanging.workDir("job-hang"), EMPLOYEE_IDENTITY_FILE))).toBe(true);
    expect(readFileSync(join(hanging.workDir("job-hang"), EMPLOYEE_IDENTITY_FILE), "utf8")).toContain(hanging.token);
    hanging.controller.abort();
    expect(await pending).toEqual({ kind: "aborted" });
    expect(existsSync(join(hanging.workDir("job-hang"), EMPLOYEE_IDENTITY_FILE))).toBe(false);
  });

  it("registers only the tools the employee's lists leave: a denied evolution_toggle is not served", async () => {
    const { api, token, run, calls } = await setup({ FAKE_MCP_CALLS: "evolution_toggle,evolution_status" });
    const result = resultOf(
      await run({ employee: { name: "Aiko", capabilities: { denied_tools: ["mcp__crewplane__evolution_toggle"] } } }),
    );
    const allowed = calls()[0]!.argv;
    expect(allowed[allowed.indexOf("--allowedTools") + 1]).toContain("mcp__crewplane__evolution_status");
    expect(allowed[allowed.indexOf("--allowedTools") + 1]).not.toContain("evolution_toggle");
    // The fake (like a model) cannot call a tool the server does not list.
    expect(evolutionCalls(api, token)).toEqual(["GET /v1/employees/emp_1/evolution (employee token)"]);
    expect(result.tool_activity).toContainEqual({ name: "mcp__crewplane__evolution_status", ok: 1, err: 0 });
  });
});

describe("an employee_turn with a usable employee token, on the fake codex", () => {
  it("gives codex the server as -c overrides naming the identity file, never the token, and the call goes through", async () => {
    const { api, token, run, calls, workDir } = await setup();
    const result = resultOf(await run({ runtime: "codex", model: "gpt-5.5" }));

    const [call] = calls();
    expect(call!.argv.join(" ")).not.toContain(token);
    const server = call!.config?.mcp_servers?.crewplane;
    expect(server).toMatchObject({
      env: { [MEMBER_CONFIG_ENV]: join(workDir(), EMPLOYEE_IDENTITY_FILE) },
      enabled_tools: ["evolution_status", "evolution_toggle"],
      default_tools_approval_mode: "approve",
    });
    expect(evolutionCalls(api, token)).toEqual(["GET /v1/employees/emp_1/evolution (employee token)"]);
    expect(result.tool_activity).toContainEqual({ name: "mcp__crewplane__evolution_status", ok: 1, err: 0 });
    expect(JSON.stringify(result)).not.toContain(token);
    expect(existsSync(join(workDir(), EMPLOYEE_IDENTITY_FILE))).toBe(false);
  });
});

describe("an employee_turn without a usable employee token", () => {
  it.each([
    ["a job rebuilt from its row ([redacted])", { employee_token: "[redacted]" }],
    ["no token", { employee_token: undefined, employee_token_expires_at: undefined }],
    ["a token that could not travel in a header", { employee_token: "mbr_x y" }],
  ])("runs claude with no crewplane server and no crewplane tool: %s", async (_, payload) => {
    const { api, run, calls, workDir } = await setup();
    const result = resultOf(await run(payload));
    const argv = calls()[0]!.argv;
    expect(argv).not.toContain("--mcp-config");
    expect(argv).not.toContain("--strict-mcp-config");
    expect(argv.join(" ")).not.toContain("mcp__crewplane__");
    expect(api.requests).toEqual([]);
    expect(result.tool_activity.some((t) => t.name.includes("evolution"))).toBe(false);
    expect(readdirSync(workDir()).filter((f) => f.startsWith("employee-"))).toEqual([]);
  });

  it("runs codex with no mcp_servers override for a [redacted] token", async () => {
    const { run, calls } = await setup();
    resultOf(await run({ runtime: "codex", model: "gpt-5.5", employee_token: "[redacted]" }));
    expect(calls()[0]!.config?.mcp_servers).toBeUndefined();
  });

  it("gives no server when the employee's explicit allow-list names no crewplane tool, token or not", async () => {
    const { api, run, calls } = await setup();
    await run({ employee: { name: "Aiko", capabilities: { allowed_tools: ["Read", "Write"] } } });
    const argv = calls()[0]!.argv;
    expect(argv).not.toContain("--mcp-config");
    expect(argv[argv.indexOf("--allowedTools") + 1]).toBe("Read,Write");
    expect(api.requests).toEqual([]);
  });

  it("gives no server to a runner started without the Worker URL", async () => {
    const { run, calls } = await setup({}, { apiUrl: false });
    resultOf(await run());
    expect(calls()[0]!.argv).not.toContain("--mcp-config");
  });

  it("runs grok, which reads MCP only from its cwd or home, without the server and writes nothing of it", async () => {
    const { api, run, workspace, workDir } = await setup({ FAKE_GROK_WRITE_FILES: JSON.stringify({ "plan.md": "p\n" }) });
    const result = resultOf(await run({ runtime: "grok", model: "grok-4" }));
    expect(result.workspace).toMatchObject({ created: 1 });
    expect(readdirSync(workspace)).toEqual(["plan.md"]);
    expect(api.requests).toEqual([]);
    expect(readdirSync(workDir()).filter((f) => f.startsWith("employee-"))).toEqual([]);
  });
});
