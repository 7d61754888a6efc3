/**
 * The runner side of a `team_stage` job: payload → scaffold → the role's (fake) CLI in the employee
 * workspace → the member's own MCP server → a stand-in team API → the result the Worker reads;
 * and the scaffold gone on every way out.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runTeamStageJob } from "../../../local-runner/src/jobs/team-stage.ts";
import type { JobContext, JobOutcome } from "../../../local-runner/src/jobs/utility.ts";
import { ephemeralRoot } from "../../../local-runner/src/members/scaffold.ts";
import type { StageResult } from "../../../local-runner/src/members/stage-result.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { startFakeTeamApi } from "../helpers/fake-team-api.ts";
import type { FakeTeamApi } from "../helpers/fake-team-api.ts";
import { fakeClis, tempDir } from "../helpers/paths.ts";
import { MODELS, STAGE_ROLE, stagePayload } from "../helpers/team-stage.ts";
import { expectAllDead, readFakePids, waitFor } from "../helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

const verifyPrompt = (receipts: string[]) =>
  `# Role: verifier\nJudge independently.\n\n<tool_activity>\nfile_change: 1 ok, 0 err\n</tool_activity>\n\n<artifact_receipts>\n${receipts.join("\n")}\n</artifact_receipts>`;

interface Setup {
  home: string;
  api: FakeTeamApi;
  argvLog: string;
}

async function setup(): Promise<Setup> {
  const api = await startFakeTeamApi();
  teardown.push(() => api.close());
  const { dir: home, cleanup } = tempDir("crewplane-stage-");
  teardown.push(cleanup);
  return { home, api, argvLog: join(home, "argv.jsonl") };
}

interface StageOptions {
  runtime?: keyof typeof MODELS;
  stage?: keyof typeof STAGE_ROLE;
  prompt?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  token?: string;
  roundCheckMs?: number;
  employee?: Record<string, unknown>;
  outputSchema?: boolean;
}

async function runStage(s: Setup, o: StageOptions = {}) {
  const stage = o.stage ?? "plan";
  const token = o.token ?? s.api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: STAGE_ROLE[stage] });
  const ctx: JobContext = {
    runtimes: runtimeTable(fakeClis),
    home: s.home,
    signal: o.signal ?? new AbortController().signal,
    env: { ...process.env, FAKE_SCENARIO: "team", FAKE_ARGV_LOG: s.argvLog, ...o.env },
    killGraceMs: 500,
    apiUrl: s.api.url,
    roundCheckMs: o.roundCheckMs ?? 60_000,
  };
  const outcome = await runTeamStageJob({ job_id: `job_${stage}`, payload: stagePayload({ ...o, token }) }, ctx);
  return { outcome, token };
}

const resultOf = (outcome: JobOutcome): StageResult => {
  if (outcome.kind !== "completed") throw new Error(`stage did not complete: ${JSON.stringify(outcome)}`);
  return outcome.result as StageResult;
};
const scaffolds = (home: string) => (existsSync(ephemeralRoot(home)) ? readdirSync(ephemeralRoot(home)) : []);
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("a team_stage job on the runner", () => {
  it("runs a claude planner whose packets reach the Worker under its pin, and reports them with usage and evidence", async () => {
    const s = await setup();
    const plan = [
      { packet_id: "sub-a", objective: "Write notes/a.md" },
      { packet_id: "sub-b", objective: "Write notes/b.md" },
    ];
    const { outcome, token } = await runStage(s, { env: { FAKE_CLAUDE_TEAM_PLAN: JSON.stringify(plan) } });
    const result = resultOf(outcome);

    expect(s.api.packets.map((p) => [p.leg, p.slot, p.packet_id])).toEqual([
      ["planner-to-executor", "", "sub-a"],
      ["planner-to-executor", ".01", "sub-b"],
    ]);
    // goal_id, round and from_role come from the member's own identity, not from the model.
    expect(s.api.packets[0]!.packet).toMatchObject({ goal_id: "task_1", round: 1, from_role: "planner", to_role: "executor" });
    expect(result).toMatchObject({
      runtime: "claude",
      cli: "claude",
      provider: "anthropic",
      model: "claude-sonnet-5-5",
      packets: ["sub-a", "sub-b"],
      usage: { input_tokens: 10, output_tokens: 5 },
      evidence: { native_tool_events: 2, mcp_calls: 2 },
      tool_activity: [{ name: "mcp__crewplane__team_handoff", ok: 2, err: 0 }],
      effort: { requested: "high", applied: "high" },
      can_write_across_rounds: true,
    });
    expect(result).not.toHaveProperty("verdict");
    expect(result).not.toHaveProperty("artifact_receipts"); // a planner declares no artifacts of its own
    expect(JSON.stringify(result)).not.toContain(token);
    // The planner ran with its role's tools only and its own MCP config, in the employee workspace.
    const argv = JSON.parse(readFileSync(s.argvLog, "utf8").trim().split("\n")[0]!);
    expect(argv.cwd).toBe(join(s.home, "agents/emp_1"));
    expect(argv.argv).toEqual(expect.arrayContaining(["--strict-mcp-config", "--effort", "high"]));
    expect(argv.argv[argv.argv.indexOf("--tools") + 1]).toBe("");
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("runs a codex executor that writes two files in the employee workspace and reports their receipts", async () => {
    const s = await setup();
    const files = { "notes/a.md": "alpha\n", "notes/b.md": "beta beta\n" };
    const { outcome } = await runStage(s, { runtime: "codex", stage: "execute", env: { FAKE_CODEX_WRITE_FILES: JSON.stringify(files) } });
    const result = resultOf(outcome);

    expect(readFileSync(join(s.home, "agents/emp_1/notes/a.md"), "utf8")).toBe("alpha\n");
    expect(result.artifact_receipts).toEqual([
      { path: "notes/a.md", state: "exists", bytes: 6, sha256: sha256("alpha\n") },
      { path: "notes/b.md", state: "exists", bytes: 10, sha256: sha256("beta beta\n") },
    ]);
    expect(result).toMatchObject({ runtime: "codex", provider: "openai", evidence: { mcp_calls: 1 } });
    expect(result).not.toHaveProperty("model"); // codex's stream never names its model: unknown, not guessed
    expect(result.tool_activity.map((t) => t.name)).toEqual(
      expect.arrayContaining(["command_execution", "file_change", "mcp__crewplane__team_handoff"]),
    );
    expect(s.api.packets).toHaveLength(1);
    expect(s.api.packets[0]).toMatchObject({ leg: "executor-to-verifier", packet: { from_role: "executor" } });
    // The executor's codex ran workspace-write in the employee dir; the sandbox follows its tools.
    const argv = JSON.parse(readFileSync(s.argvLog, "utf8").trim().split("\n")[0]!).argv as string[];
    expect(argv[argv.indexOf("-s") + 1]).toBe("workspace-write");
    expect(argv[argv.indexOf("--cd") + 1]).toBe(join(s.home, "agents/emp_1"));
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("reports what the Worker's own teamStageResult schema reads without losing a receipt, a count or the verdict", async () => {
    // The Worker's schema (src/jobs/team-stage-job.ts), loaded at run time: the runner's tsconfig does not
    // type-check Worker sources, but vitest runs them, so the contract is checked on both sides' code.
    const workerSchema = "../../../src/jobs/team-stage-job.ts";
    const { teamStageResult } = (await import(/* @vite-ignore */ workerSchema)) as {
      teamStageResult: { safeParse(v: unknown): { success: boolean; data?: any; error?: unknown } };
    };
    const s = await setup();
    const exec = resultOf(
      (await runStage(s, { runtime: "codex", stage: "execute", env: { FAKE_CODEX_WRITE_FILES: JSON.stringify({ "a.md": "a\n" }) } }))
        .outcome,
    );
    const parsedExec = teamStageResult.safeParse(JSON.parse(JSON.stringify(exec)));
    expect(parsedExec.success, JSON.stringify(parsedExec.error)).toBe(true);
    expect(parsedExec.data).toMatchObject({
      runtime: "codex",
      provider: "openai",
      usage: exec.usage,
      evidence: { native_tool_events: exec.evidence.native_tool_events, mcp_calls: 1 },
      tool_activity: exec.tool_activity,
      artifact_receipts: exec.artifact_receipts,
    });
    const verify = resultOf((await runStage(s, { stage: "verify", prompt: verifyPrompt(["a.md missing"]) })).outcome);
    expect(teamStageResult.safeParse(JSON.parse(JSON.stringify(verify))).data).toMatchObject({
      verdict: "FAIL",
      reasons: ["a.md missing"],
    });
  });

  it("gives a lying executor's undeclared-on-disk file a `missing` receipt", async () => {
    const s = await setup();
    const { outcome } = await runStage(s, {
      runtime: "codex",
      stage: "execute",
      env: {
        FAKE_CODEX_WRITE_FILES: JSON.stringify({ "notes/a.md": "alpha\n" }),
        FAKE_CODEX_TEAM_DECLARE: JSON.stringify(["notes/a.md", "notes/b.md", "../../outside.md"]),
      },
    });
    expect(resultOf(outcome).artifact_receipts).toEqual([
      { path: "notes/a.md", state: "exists", bytes: 6, sha256: sha256("alpha\n") },
      { path: "notes/b.md", state: "missing" },
      { path: "../../outside.md", state: "outside_workspace", reason: "escapes_workspace" },
    ]);
    expect(resultOf(outcome).artifact_audits).toEqual([
      expect.objectContaining({ type: "team_packet_artifact_refused", path: "../../outside.md" }),
    ]);
  });

  it("turns a read-only employee into a read-only executor: codex runs read-only and its writes are refused", async () => {
    const s = await setup();
    const { outcome } = await runStage(s, {
      runtime: "codex",
      stage: "execute",
      employee: { name: "Aiko", capabilities: { allowed_tools: ["Read", "Grep"] } },
      env: { FAKE_CODEX_WRITE_FILES: JSON.stringify({ "notes/a.md": "alpha\n" }) },
    });
    const result = resultOf(outcome);
    expect(existsSync(join(s.home, "agents/emp_1/notes/a.md"))).toBe(false);
    expect(result.tool_activity.find((t) => t.name === "file_change")).toEqual({ name: "file_change", ok: 0, err: 1 });
    expect(result.artifact_receipts).toEqual([]);
    const argv = JSON.parse(readFileSync(s.argvLog, "utf8").trim().split("\n")[0]!).argv as string[];
    expect(argv[argv.indexOf("-s") + 1]).toBe("read-only");
  });

  it("reads a verifier's PASS from its JSON answer, and a FAIL with the gaps it names and hands back", async () => {
    const s = await setup();
    const pass = await runStage(s, { stage: "verify", prompt: verifyPrompt(["notes/a.md 6B sha256=3f2a… exists"]), outputSchema: true });
    expect(resultOf(pass.outcome)).toMatchObject({ verdict: "PASS", reasons: [] });

    const fail = await runStage(s, {
      stage: "verify",
      prompt: verifyPrompt(["notes/a.md 6B sha256=3f2a… exists", "notes/b.md missing"]),
      outputSchema: true,
    });
    expect(resultOf(fail.outcome)).toMatchObject({ verdict: "FAIL", reasons: ["notes/b.md missing"], packets: ["gaps-1"] });
    expect(s.api.packets.at(-1)).toMatchObject({ leg: "verifier-to-executor", packet_id: "gaps-1" });
  });

  it("passes the verdict schema to a codex verifier with --output-schema", async () => {
    const s = await setup();
    const { outcome } = await runStage(s, {
      runtime: "codex",
      stage: "verify",
      prompt: verifyPrompt(["notes/b.md missing"]),
      outputSchema: true,
    });
    expect(resultOf(outcome)).toMatchObject({ verdict: "FAIL", reasons: ["notes/b.md missing"] });
    const argv = JSON.parse(readFileSync(s.argvLog, "utf8").trim().split("\n")[0]!).argv as string[];
    expect(argv).toContain("--output-schema");
  });

  it.each(["antigravity", "grok"] as const)("reads the verdict of a %s verifier from the receipts in its prompt", async (runtime) => {
    const s = await setup();
    const { outcome } = await runStage(s, {
      runtime,
      stage: "verify",
      prompt: verifyPrompt(["notes/a.md 6B sha256=3f2a… exists", "notes/c.md missing"]),
    });
    expect(resultOf(outcome)).toMatchObject({ runtime, verdict: "FAIL", reasons: ["notes/c.md missing"], can_write_across_rounds: false });
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("lets a grok executor's files land in its scaffold only: its receipts honestly say missing", async () => {
    const s = await setup();
    const { outcome } = await runStage(s, {
      runtime: "grok",
      stage: "execute",
      env: { FAKE_GROK_WRITE_FILES: JSON.stringify({ "notes/a.md": "alpha\n" }) },
    });
    const result = resultOf(outcome);
    expect(result).toMatchObject({
      runtime: "grok",
      can_write_across_rounds: false,
      artifact_receipts: [{ path: "notes/a.md", state: "missing" }],
    });
    expect(existsSync(join(s.home, "agents/emp_1/notes/a.md"))).toBe(false);
    expect(scaffolds(s.home)).toEqual([]); // and the scaffold, with the file in it, is gone
  });

  it("runs a synthesize stage as a read-only utility member whose text is its result: no receipts, no verdict", async () => {
    const s = await setup();
    const prompt = [
      "# Role: utility",
      "Synthesize the executors' packets below into one account of this round's output. Hand off nothing.",
      "",
      "### Packet result-1 (executor → verifier, round 1)",
      "Objective: Wrote notes/a.md",
    ].join("\n");
    // A write the member would make if it could: a read-only member must not.
    const { outcome } = await runStage(s, { stage: "synthesize", prompt, env: { FAKE_WRITE_FILES: JSON.stringify({ "x.md": "x" }) } });
    const result = resultOf(outcome);
    expect(result).toMatchObject({ text: "Synthesis: 1 packet(s): result-1.", runtime: "claude", packets: [] });
    expect(result).not.toHaveProperty("artifact_receipts");
    expect(result).not.toHaveProperty("verdict");
    expect(result).not.toHaveProperty("verdict_unparseable");
    const argv = JSON.parse(readFileSync(s.argvLog, "utf8").trim().split("\n")[0]!).argv as string[];
    expect(argv[argv.indexOf("--tools") + 1]).toBe("");
    expect(argv[argv.indexOf("--allowedTools") + 1]).toBe("mcp__crewplane__team_handoff");
    expect(existsSync(join(s.home, "agents/emp_1/x.md"))).toBe(false);
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("reports an answer that carries no verdict as unparseable rather than guessing one", async () => {
    const s = await setup();
    const { outcome } = await runStage(s, { stage: "verify", prompt: verifyPrompt([]), env: { FAKE_SCENARIO: "success" } });
    const result = resultOf(outcome);
    expect(result.verdict_unparseable).toBe(true);
    expect(result).not.toHaveProperty("verdict");
  });
});

describe("a team_stage job refuses or fails honestly, and never leaves its scaffold", () => {
  it.each([
    ["fail", "not_logged_in"],
    ["crash", "incomplete_output"],
    ["maxturns", "max_turns"],
  ])("claude %s → failed %s, naming runtime and model, and saying what ran", async (scenario, code) => {
    const s = await setup();
    const { outcome } = await runStage(s, { env: { FAKE_SCENARIO: scenario } });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code } });
    expect(outcome.kind === "failed" && outcome.failure.message).toContain("claude (model claude-sonnet-5-5)");
    // The CLI started and its stream named the model (claude's init event): the ledger gets both.
    expect(outcome.kind === "failed" && outcome.failure.ran).toEqual({
      runtime: "claude",
      provider: "anthropic",
      model: "claude-sonnet-5-5",
    });
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("ends a hung member at the stage timeout with its whole process group, and removes the scaffold", async () => {
    const s = await setup();
    const { outcome } = await runStage(s, { runtime: "codex", stage: "execute", env: { FAKE_SCENARIO: "hang" }, timeoutMs: 2_000 });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "timeout", retryable: true } });
    expect(outcome.kind === "failed" && outcome.failure.message).toContain("codex (model gpt-5.5)");
    // codex ran, but its stream never named a model before it hung: none is reported, none guessed.
    expect(outcome.kind === "failed" && outcome.failure.ran).toEqual({ runtime: "codex", provider: "openai" });
    await expectAllDead(readFakePids(join(s.home, "agents/emp_1"), "codex")!);
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("fails a stage whose runtime this runner lacks, with no other vendor standing in", async () => {
    const s = await setup();
    const token = s.api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "planner" });
    const outcome = await runTeamStageJob(
      { job_id: "job_x", payload: stagePayload({ token, runtime: "grok" }) },
      { runtimes: runtimeTable({ claude: fakeClis.claude }), home: s.home, signal: new AbortController().signal, apiUrl: s.api.url },
    );
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    expect(outcome.kind === "failed" && outcome.failure.message).toContain("grok (model grok-4)");
    expect(outcome.kind === "failed" && outcome.failure).not.toHaveProperty("ran"); // nothing was spawned
  });

  it("does not start a member whose round already ended (its token is refused)", async () => {
    const s = await setup();
    const token = s.api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "planner" });
    s.api.revoke(token);
    const { outcome } = await runStage(s, { token });
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "round_ended", retryable: false } });
    expect(outcome.kind === "failed" && outcome.failure).not.toHaveProperty("ran");
    expect(existsSync(s.argvLog)).toBe(false);
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("stops a running member when its round ends under it (cancelled), kills its CLI and removes the scaffold", async () => {
    const s = await setup();
    const token = s.api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "executor" });
    const running = runStage(s, { token, runtime: "codex", stage: "execute", env: { FAKE_SCENARIO: "hang" }, roundCheckMs: 200 });
    const pids = await waitFor(() => readFakePids(join(s.home, "agents/emp_1"), "codex"), "the fake codex to start", 20_000);
    expect(scaffolds(s.home)).toHaveLength(1);
    s.api.revoke(token);
    const { outcome } = await running;
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "round_ended", ran: { runtime: "codex", provider: "openai" } } });
    await expectAllDead(pids);
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("on the runner's shutdown kills the member, reports it aborted and removes the scaffold", async () => {
    const s = await setup();
    const stop = new AbortController();
    const running = runStage(s, { signal: stop.signal, env: { FAKE_SCENARIO: "hang" } });
    const pids = await waitFor(() => readFakePids(join(s.home, "agents/emp_1"), "claude"), "the fake claude to start", 20_000);
    stop.abort();
    expect((await running).outcome).toEqual({ kind: "aborted" });
    await expectAllDead(pids);
    expect(scaffolds(s.home)).toEqual([]);
  });

  it("refuses an invalid payload as unsupported_job without touching the disk", async () => {
    const s = await setup();
    const outcome = await runTeamStageJob(
      { job_id: "job_bad", payload: { runtime: "openai_compat", role: "planner" } },
      { runtimes: runtimeTable(fakeClis), home: s.home, signal: new AbortController().signal, apiUrl: s.api.url },
    );
    expect(outcome).toMatchObject({ kind: "failed", failure: { code: "unsupported_job", retryable: false } });
    expect(existsSync(join(s.home, "agents"))).toBe(false);
  });
});
