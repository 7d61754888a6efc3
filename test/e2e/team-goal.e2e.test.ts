/**
 * Team-as-Agent end to end (issues 10 and 11): the Worker under wrangler's test harness, the real
 * local-runner process, and fake model CLIs that play their role from the stage prompt they get
 * (scenario `team`): a claude planner, a codex executor that writes files in the employee
 * workspace, a claude verifier that judges from the artifact receipts in its prompt. Goals are
 * started over plain HTTP with POST /v1/employees/:id/goals.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, ROOT, startRunner, startWorker } from "./stack";
import { GOAL, TEAM } from "./team-fixtures";

const FILES = { "notes/a.md": "# Week one, part A\n", "notes/b.md": "# Week one, part B\n" };

type Stack = Awaited<ReturnType<typeof startWorker>>;

async function settled(stack: Stack, taskId: string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await stack.api(`/v1/tasks/${taskId}`);
    if (body.status !== "assigned") return body;
    if (Date.now() > deadline)
      throw new Error(
        `task ${taskId} still assigned: ${JSON.stringify(body.rounds?.map((r: any) => [r.phase, r.stages.map((s: any) => `${s.kind}:${s.status}`)]))}`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The task's attachments archive once it is recorded (the runner leases it after the settle). */
async function attachmentsOf(stack: Stack, taskId: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await stack.api(`/v1/tasks/${taskId}`);
    if (body.attachments && body.attachments.status !== "pending") return body.attachments;
    if (Date.now() > deadline) throw new Error(`task ${taskId}: attachments still ${JSON.stringify(body.attachments)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const scaffolds = (home: string) => {
  const root = join(home, "agents/.ephemeral");
  return existsSync(root) ? readdirSync(root) : [];
};

async function employee(stack: Stack, id: string) {
  const put = await stack.api(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: id, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
  });
  expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
}

describe("a team goal round on the real runner", () => {
  let stack: Stack;
  let runnerToken: string;

  beforeAll(async () => {
    stack = await startWorker();
    expect((await stack.api("/v1/config/team", { method: "PUT", body: TEAM })).status).toBe(200);
    runnerToken = (await stack.api("/v1/admin/runners", { body: { name: "team-e2e" } })).body.token;
  });

  afterAll(async () => {
    await stack?.close();
  });

  it("plans with claude, executes with codex (two files written), verifies on the receipts with claude, and settles the task done", async () => {
    await employee(stack, "aiko");
    const argvLog = join(mkdtempSync(join(tmpdir(), "crewplane-e2e-argv-")), "calls.jsonl");
    const runner = startRunner(stack.base, runnerToken, {
      FAKE_SCENARIO: "team",
      FAKE_CODEX_WRITE_FILES: JSON.stringify(FILES),
      FAKE_ARGV_LOG: argvLog,
    });
    try {
      const goal = await stack.api("/v1/employees/aiko/goals", { body: GOAL });
      expect(goal.status, JSON.stringify(goal.body)).toBe(201);
      expect(goal.body).toMatchObject({
        assigned_to: "aiko",
        gate: { decision: "team", reason: "gate_always_team", measured: { hubs: [{ criterion: 2, why: "refers_to_other_items" }] } },
        round: { phase: "planning" },
      });
      expect(goal.body.team_spec.roles.executor).toMatchObject({ runtime: "codex", model: "gpt-5.5" });

      const task = await settled(stack, goal.body.task_id);
      expect(task).toMatchObject({ status: "done", retry_count: 0, mode: "goal", settled_by: "goal_loop" });
      expect(task.rounds).toHaveLength(1);
      expect(task.rounds[0]).toMatchObject({
        phase: "accepted",
        verdict: "PASS",
        verdict_source: "verifier",
        evaluation: { source: "evaluator", accepted: true, unmet: [], stage_one: "passed" },
      });

      // The executor's files are in the employee workspace, where the next round can find them.
      for (const [path, content] of Object.entries(FILES))
        expect(readFileSync(join(runner.home, "agents/aiko", path), "utf8")).toBe(content);
      // Every member's scaffold is gone with the round.
      expect(scaffolds(runner.home)).toEqual([]);

      // The accepted goal's named files went into aiko's attachments (seed 002), re-checked and uploaded
      // by the real runner under an attachments_archive lease, and can be downloaded from the task.
      const archive = await attachmentsOf(stack, goal.body.task_id);
      expect(archive).toMatchObject({ status: "archived", round: 1, refused: [] });
      expect(archive.archived.map((f: any) => [f.path, f.bytes])).toEqual([
        ["notes/a.md", 19],
        ["notes/b.md", 19],
      ]);
      const download = await fetch(`${stack.base}${archive.archived[0].download}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(download.status).toBe(200);
      expect(await download.text()).toBe(FILES["notes/a.md"]);

      // The ledger: who was asked, who answered, what was observed.
      const turns = task.role_turns as any[];
      expect(turns.map((t) => t.role)).toEqual(["planner", "executor", "utility", "verifier", "evaluator"]);
      expect(turns.find((t) => t.role === "planner")).toMatchObject({
        requested_runtime: "claude",
        runtime_used: "claude",
        failover: false,
      });
      expect(turns.find((t) => t.role === "executor")).toMatchObject({
        requested_runtime: "codex",
        runtime_used: "codex",
        provider: "openai",
        evidence_grade: "full",
        outcome: "completed",
        // codex reports 100 input tokens of which 20 cached: the ledger keeps them apart.
        usage: { input_tokens: 80, cache_read_input_tokens: 20, output_tokens: 10 },
      });
      expect(turns.find((t) => t.role === "executor").packets).toHaveLength(1);

      // The verifier judged from receipts it was shown: both files `exists` with their real hashes.
      const jobs = (await stack.api(`/v1/events?type=team_stage_dispatched&subject=${goal.body.task_id}`)).body.events;
      const verifyJob = jobs.find((e: any) => e.payload.role === "verifier").payload.job_id;
      const executeJob = jobs.find((e: any) => e.payload.role === "executor").payload.job_id;
      const executed = (await stack.api(`/v1/admin/jobs/${executeJob}`)).body;
      expect(executed.result.artifact_receipts).toEqual([
        expect.objectContaining({ path: "notes/a.md", state: "exists", bytes: 19 }),
        expect.objectContaining({ path: "notes/b.md", state: "exists", bytes: 19 }),
      ]);
      // The executor's native tool events reached the job's evidence trail, labelled with their runtime;
      // its team_handoff call is kept, its self-echoed output is not.
      const rows = executed.result.evidence.rows as any[];
      expect(rows.map((r) => r.tool)).toEqual(expect.arrayContaining(["command_execution", "file_change"]));
      expect(rows.every((r) => r.runtime === "codex" && r.source === "native")).toBe(true);
      const handoffRow = rows.find((r) => r.mcp_tool === "team_handoff");
      expect(handoffRow).toMatchObject({ output_suppressed: "self_echo" });
      expect(handoffRow).not.toHaveProperty("output");
      expect((await stack.api(`/v1/admin/jobs/${verifyJob}`)).body.result).toMatchObject({ verdict: "PASS", runtime: "claude" });
      // What the verifier's CLI was really given: the receipts, the criteria, never the planner's words.
      const calls = readFileSync(argvLog, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      // planner, executor, the utility's synthesis, verifier, and the evaluator of the acceptance path.
      expect(calls.map((c) => c.cli)).toEqual(["claude", "codex", "claude", "claude", "claude"]);
      expect(calls[2].prompt.split("\n")[0]).toBe("# Role: utility");
      const verifierPrompt: string = calls[3].prompt;
      expect(verifierPrompt).toMatch(
        /<artifact_receipts>\nnotes\/a\.md 19B sha256=[0-9a-f]{8}… exists\nnotes\/b\.md 19B sha256=[0-9a-f]{8}… exists\n<\/artifact_receipts>/,
      );
      expect(verifierPrompt).toContain("both describe the first week");
      expect(verifierPrompt).not.toContain("Carry out the goal"); // the planner's subtask wording
      expect(calls[3].argv).toEqual(expect.arrayContaining(["--model", "claude-haiku-4-5", "--effort", "low", "--strict-mcp-config"]));
      // The evaluator judged each frozen criterion from the same receipts, as the employee's own model.
      const evaluatorPrompt: string = calls[4].prompt;
      expect(evaluatorPrompt.split("\n")[0]).toBe("# Role: evaluator");
      expect(evaluatorPrompt).toMatch(/notes\/b\.md 19B sha256=[0-9a-f]{8}… exists/);
      expect(calls[4].argv).toEqual(expect.arrayContaining(["--model", "claude-sonnet-4-6"]));

      const trail = (await stack.api(`/v1/events?type=task.&subject=${goal.body.task_id}`)).body.events.map((e: any) => e.type);
      expect(trail).toEqual(["task.created", "task.settled"]);
    } finally {
      await runner.stop();
      rmSync(dirname(argvLog), { recursive: true, force: true });
    }
  });

  it.each([
    ["antigravity", "gemini-3.7-flash", "agy"],
    ["grok", "grok-4", "grok"],
  ] as const)("lets the employee's own %s verifier judge the receipts and pass the round", async (runtime, model, cli) => {
    const id = `judge-${runtime}`;
    const put = await stack.api(`/v1/employees/${id}`, {
      method: "PUT",
      body: { name: id, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, team: { roles: { verifier: { runtime, model } } } },
    });
    expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
    const argvLog = join(mkdtempSync(join(tmpdir(), "crewplane-e2e-argv-")), "calls.jsonl");
    const runner = startRunner(stack.base, runnerToken, {
      FAKE_SCENARIO: "team",
      FAKE_CODEX_WRITE_FILES: JSON.stringify(FILES),
      FAKE_ARGV_LOG: argvLog,
    });
    try {
      const goal = await stack.api(`/v1/employees/${id}/goals`, { body: GOAL });
      expect(goal.status, JSON.stringify(goal.body)).toBe(201);
      expect(goal.body.team_spec.roles.verifier).toMatchObject({ runtime, model });
      const task = await settled(stack, goal.body.task_id);
      expect(task).toMatchObject({ status: "done" });
      expect(task.rounds[0]).toMatchObject({ phase: "accepted", verdict: "PASS", verdict_source: "verifier" });
      expect(task.role_turns.find((t: any) => t.role === "verifier")).toMatchObject({
        requested_runtime: runtime,
        runtime_used: runtime,
        request_model: model,
        failover: false,
        outcome: "completed",
      });
      const calls = readFileSync(argvLog, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(calls.map((c) => c.cli)).toEqual(["claude", "codex", "claude", cli, "claude"]);
      expect(calls[3].prompt).toMatch(/notes\/a\.md 19B sha256=[0-9a-f]{8}… exists/);
      expect(scaffolds(runner.home)).toEqual([]);
    } finally {
      await runner.stop();
      rmSync(dirname(argvLog), { recursive: true, force: true });
    }
  });

  it(
    "rejects a run whose executor lies about a file round after round, and stops when the same gaps come back (oscillation)",
    { timeout: 300_000 },
    async () => {
      await employee(stack, "kenji");
      const runner = startRunner(stack.base, runnerToken, {
        FAKE_SCENARIO: "team",
        FAKE_CODEX_WRITE_FILES: JSON.stringify({ "notes/a.md": FILES["notes/a.md"] }),
        // It claims notes/b.md too, which it never wrote.
        FAKE_CODEX_TEAM_DECLARE: JSON.stringify(["notes/a.md", "notes/b.md"]),
      });
      try {
        const goal = await stack.api("/v1/employees/kenji/goals", { body: GOAL });
        expect(goal.status, JSON.stringify(goal.body)).toBe(201);
        const task = await settled(stack, goal.body.task_id, 240_000);
        expect(task).toMatchObject({ status: "needs_human", pause_class: "no_progress", retry_count: 3 });
        expect(task.rounds).toHaveLength(2);
        for (const round of task.rounds)
          expect(round).toMatchObject({
            phase: "rejected",
            verdict: "FAIL",
            repaired: true,
            verdict_reasons: ["notes/b.md missing"],
            evaluation: { stage_one: "repaired", unmet: [2, 3] },
          });
        expect(task.rounds[0].evaluation.fingerprint).toBe(task.rounds[1].evaluation.fingerprint);
        const stopped = (await stack.api(`/v1/events?type=goal_stopped&subject=${goal.body.task_id}`)).body.events[0];
        expect(stopped.payload).toMatchObject({ reason: "gap_oscillation", repeats_round: 1, best_round: { round: 2, met: 1, of: 3 } });
        expect((task.role_turns as any[]).filter((t) => t.round === 1).map((t) => `${t.role}:${t.stage}`)).toEqual([
          "planner:plan",
          "executor:execute",
          "utility:synthesize",
          "verifier:verify",
          "executor:repair",
          "evaluator:evaluate",
        ]);
        expect(existsSync(join(runner.home, "agents/kenji/notes/b.md"))).toBe(false);
        expect(scaffolds(runner.home)).toEqual([]);
      } finally {
        await runner.stop();
      }
    },
  );

  it("parks a goal whose planner hands off nothing in needs_human (no_progress), leaving no scaffold", async () => {
    await employee(stack, "mei");
    const runner = startRunner(stack.base, runnerToken, { FAKE_SCENARIO: "team", FAKE_CLAUDE_TEAM_PLAN: "[]" });
    try {
      const goal = await stack.api("/v1/employees/mei/goals", { body: GOAL });
      const task = await settled(stack, goal.body.task_id);
      expect(task).toMatchObject({ status: "needs_human", pause_class: "no_progress" });
      expect(task.rounds[0].outcome).toMatchObject({ reason: "planner_no_packets" });
      expect(scaffolds(runner.home)).toEqual([]);
    } finally {
      await runner.stop();
    }
  });

  it("serves a member's memory and wiki reads from the crewplane MCP server with its member token, scoped to its employee", async () => {
    await employee(stack, "sora");
    await employee(stack, "ren");
    expect(
      (
        await stack.api("/v1/employees/sora/memory", {
          body: { text: "The onboarding checklist lives in notes/checklist.md", tags: ["onboarding"] },
        })
      ).status,
    ).toBe(201);
    expect((await stack.api("/v1/employees/ren/memory", { body: { text: "Ren's onboarding secret" } })).status).toBe(201);
    expect(
      (
        await stack.api("/v1/employees/sora/wiki/first-week", {
          method: "PUT",
          body: { title: "First week", body: "Day one: accounts. Day two: onboarding tour." },
        })
      ).status,
    ).toBe(201);

    // No runner runs now: this test leases the planner's stage itself to get a real member token.
    const goal = await stack.api("/v1/employees/sora/goals", { body: GOAL });
    expect(goal.status).toBe(201);
    let leased: any;
    for (let i = 0; i < 40 && !leased; i++) {
      const res = await stack.api("/v1/runner/lease", {
        token: runnerToken,
        body: { capacity: 5, wait_ms: 1_000, runtimes: ["claude", "codex"] },
      });
      leased = res.body.jobs.find((j: any) => j.payload.task_id === goal.body.task_id);
    }
    expect(leased?.payload.role).toBe("planner");

    const dir = mkdtempSync(join(tmpdir(), "crewplane-mcp-e2e-"));
    const member = join(dir, "member.json");
    writeFileSync(
      member,
      JSON.stringify({
        api_url: stack.base,
        member_token: leased.payload.member_token,
        employee_id: "sora",
        task_id: goal.body.task_id,
        round: 1,
        role: "planner",
        tools: ["team_handoff", "wiki_search", "memory_search"],
        working_state_path: join(dir, "state.md"),
      }),
    );
    const client = new Client({ name: "e2e", version: "0.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: join(ROOT, "local-runner/bin/crewplane-mcp"),
        env: { ...(process.env as Record<string, string>), CREWPLANE_MEMBER_CONFIG: member },
      }),
    );
    try {
      const text = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[] };
        return { isError: r.isError === true, text: r.content.map((c) => c.text).join("\n") };
      };
      const memory = await text("memory_search", { q: "checklist" });
      expect(memory.isError).toBe(false);
      expect(JSON.parse(memory.text).entries).toEqual([
        expect.objectContaining({ text: "The onboarding checklist lives in notes/checklist.md" }),
      ]);
      const wiki = await text("wiki_search", { q: "onboarding tour" });
      expect(JSON.parse(wiki.text).pages).toEqual([expect.objectContaining({ slug: "first-week", title: "First week" })]);
      // The member cannot read another employee's memory with its token.
      const other = await fetch(`${stack.base}/v1/employees/ren/memory?q=secret`, {
        headers: { authorization: `Bearer ${leased.payload.member_token}` },
      });
      expect(other.status).toBe(403);
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
      await stack.api(`/v1/runner/jobs/${leased.job_id}/fail`, {
        token: runnerToken,
        body: { lease_id: leased.lease_id, error: { code: "cli_error", message: "e2e: not run" }, retryable: false },
      });
    }
  });
});
