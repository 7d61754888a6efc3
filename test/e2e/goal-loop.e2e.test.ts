/**
 * The goal loop end to end (issue 17): the Worker under wrangler's test harness, the real
 * local-runner process, and fake CLIs that play each call from its prompt (scenario `team`): the
 * employee's own run writes files in its workspace, the evaluator judges each frozen criterion from
 * the receipts, team members play their roles. Nobody settles a goal by hand here: the loop does.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../runner/helpers/processes";
import { startRunner, startWorker } from "./stack";
import { TEAM } from "./team-fixtures";

type Stack = Awaited<ReturnType<typeof startWorker>>;

const NOTES = { "notes/a.md": "# Week one, part A\n", "notes/b.md": "# Week one, part B\n", "notes/c.md": "# Week one, part C\n" };
const CRITERIA = ["notes/a.md exists", "notes/b.md exists", "notes/c.md exists"];

async function settled(stack: Stack, taskId: string, timeoutMs = 150_000) {
  let last: any;
  return waitFor(
    async () => {
      last = (await stack.api(`/v1/tasks/${taskId}`)).body;
      return last.status !== "assigned" ? last : undefined;
    },
    `task ${taskId} to settle (last: ${JSON.stringify(last?.goal_loop)} ${JSON.stringify(last?.rounds?.map((r: any) => [r.phase, r.stages.map((s: any) => `${s.kind}:${s.status}`)]))})`,
    timeoutMs,
    500,
  );
}

const callsOf = (log: string) =>
  existsSync(log)
    ? readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

describe("the goal loop on the real runner", () => {
  let stack: Stack;
  let runnerToken: string;

  beforeAll(async () => {
    stack = await startWorker();
    runnerToken = (await stack.api("/v1/admin/runners", { body: { name: "goal-loop-e2e" } })).body.token;
  });

  afterAll(async () => {
    await stack?.close();
  });

  async function employee(id: string, fields: Record<string, unknown> = {}) {
    const put = await stack.api(`/v1/employees/${id}`, {
      method: "PUT",
      body: { name: id, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, ...fields },
    });
    expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
  }

  it("works a solo goal with the employee's own claude in its workspace and settles it done on the evaluator's judgement; a manual task is never picked up", async () => {
    await employee("aiko", { capabilities: { allowed_tools: ["Read", "Write", "Edit", "mcp__crewplane__*"] } });
    const argvLog = join(mkdtempSync(join(tmpdir(), "crewplane-e2e-argv-")), "calls.jsonl");
    const runner = startRunner(stack.base, runnerToken, {
      FAKE_SCENARIO: "team",
      FAKE_CLAUDE_WRITE_FILES: JSON.stringify(NOTES),
      FAKE_ARGV_LOG: argvLog,
      // The employee asks its own evolution status through the crewplane MCP server (its run's token).
      FAKE_MCP_CALLS: "evolution_status",
    });
    try {
      const manual = await stack.api("/v1/tasks", {
        body: { title: "Sign the lease by hand", mode: "plain", assignee: "aiko", manual: true },
      });
      expect(manual.status).toBe(201);
      const goal = await stack.api("/v1/employees/aiko/goals", {
        body: { title: "Write the onboarding notes", acceptance_criteria: CRITERIA },
      });
      expect(goal.status, JSON.stringify(goal.body)).toBe(201);
      expect(goal.body).toMatchObject({ gate: { decision: "solo" }, round: { mode: "solo", phase: "working" } });

      const task = await settled(stack, goal.body.task_id);
      expect(task).toMatchObject({ status: "done", settled_by: "goal_loop", retry_count: 0, goal_loop: { rounds_used: 1 } });
      expect(task.rounds[0]).toMatchObject({ mode: "solo", phase: "accepted", evaluation: { source: "evaluator", unmet: [] } });
      for (const [path, content] of Object.entries(NOTES))
        expect(readFileSync(join(runner.home, "agents/aiko", path), "utf8")).toBe(content);

      const work = task.role_turns.find((t: any) => t.role === "employee");
      expect(work).toMatchObject({ stage: "work", requested_runtime: "claude", runtime_used: "claude", outcome: "completed" });
      const workJob = (await stack.api(`/v1/admin/jobs/${work.job_id}`)).body;
      expect(workJob.result.text).toContain("evolution_status ok");
      expect(workJob.result.tool_activity).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "mcp__crewplane__evolution_status", ok: 1 })]),
      );
      expect(JSON.stringify(workJob)).not.toMatch(/mbr_[0-9a-f]{16}\.[0-9a-f]{64}/);
      expect(workJob.result.artifact_receipts.map((r: any) => [r.path, r.state, r.bytes])).toEqual([
        ["notes/a.md", "exists", 19],
        ["notes/b.md", "exists", 19],
        ["notes/c.md", "exists", 19],
      ]);

      // Two CLI calls: the employee's own run (in its workspace, with its tools, the prompt on stdin)
      // and the evaluator's; nothing for the manual task.
      const calls = callsOf(argvLog);
      expect(calls.map((c) => c.cli)).toEqual(["claude", "claude"]);
      expect(calls[0].prompt.split("\n")[0]).toBe("# Goal round 1 for aiko");
      expect(calls[0].cwd).toBe(join(runner.home, "agents/aiko"));
      expect(calls[0].argv).toEqual(expect.arrayContaining(["--model", "claude-sonnet-4-6", "--tools", "Read,Write,Edit"]));
      expect(calls[0].argv.join(" ")).not.toContain("onboarding notes");
      expect(calls[1].prompt.split("\n")[0]).toBe("# Role: evaluator");
      expect(calls.some((c) => c.prompt.includes("Sign the lease"))).toBe(false);
      const untouched = (await stack.api(`/v1/tasks/${manual.body.task_id}`)).body;
      expect(untouched).toMatchObject({ status: "assigned", manual: true, goal_loop: { manual: true } });
      expect(untouched).not.toHaveProperty("rounds");
    } finally {
      await runner.stop();
      rmSync(dirname(argvLog), { recursive: true, force: true });
    }
  });

  it("gives a goal that never passes its rounds, each building on the last, then parks it as budget_exhausted with its best round", async () => {
    await employee("bo");
    const runner = startRunner(stack.base, runnerToken, {
      FAKE_SCENARIO: "team",
      FAKE_CLAUDE_WRITE_FILES_ROUND_1: JSON.stringify({ "notes/a.md": NOTES["notes/a.md"] }),
      FAKE_CLAUDE_WRITE_FILES_ROUND_2: JSON.stringify({ "notes/b.md": NOTES["notes/b.md"] }),
    });
    try {
      const goal = await stack.api("/v1/employees/bo/goals", {
        body: { title: "Write the notes", acceptance_criteria: CRITERIA, rounds_left: 2 },
      });
      const task = await settled(stack, goal.body.task_id);
      expect(task).toMatchObject({
        status: "needs_human",
        pause_class: "budget_exhausted",
        goal_loop: { rounds_used: 2, rounds_left: 0, best_round: { round: 2, met: 2, of: 3, unmet: [3] } },
      });
      // Round 2 saw round 1's file again (re-checked), so both count.
      expect(task.rounds.map((r: any) => r.evaluation.unmet)).toEqual([[2, 3], [3]]);
      const stopped = (await stack.api(`/v1/events?type=goal_stopped&subject=${goal.body.task_id}`)).body.events;
      expect(stopped[0].payload).toMatchObject({ reason: "rounds_exhausted", best_round: { round: 2 } });
    } finally {
      await runner.stop();
    }
  });

  it(
    "runs a team goal whose verifier fails round 1 and passes round 2: re-checked spec, degraded round 2, settled done",
    { timeout: 300_000 },
    async () => {
      expect((await stack.api("/v1/config/team", { method: "PUT", body: TEAM })).status).toBe(200);
      // Round 1 costs 4 spawns (planner, executor, verifier, repair); 7 leaves 3, so round 2 gives up
      // the utility and the repair pass to fit.
      expect((await stack.api("/v1/config/dispatch", { method: "PUT", body: { team_budget: { max_spawns_per_task: 7 } } })).status).toBe(
        200,
      );
      await employee("cora");
      const runner = startRunner(stack.base, runnerToken, {
        FAKE_SCENARIO: "team",
        // Round 1: the executor writes a.md but claims b.md too; round 2: it writes both.
        FAKE_CODEX_WRITE_FILES_ROUND_1: JSON.stringify({ "notes/a.md": NOTES["notes/a.md"] }),
        FAKE_CODEX_TEAM_DECLARE_ROUND_1: JSON.stringify(["notes/a.md", "notes/b.md"]),
        FAKE_CODEX_WRITE_FILES_ROUND_2: JSON.stringify({ "notes/a.md": NOTES["notes/a.md"], "notes/b.md": NOTES["notes/b.md"] }),
      });
      try {
        const goal = await stack.api("/v1/employees/cora/goals", {
          body: {
            title: "Write the onboarding notes",
            acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "both describe the first week"],
            signals: { independent_items: 4, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true },
          },
        });
        expect(goal.body).toMatchObject({ gate: { decision: "team" }, round: { mode: "team" } });
        const task = await settled(stack, goal.body.task_id, 240_000);
        expect(task).toMatchObject({ status: "done", settled_by: "goal_loop", goal_loop: { rounds_used: 2 } });
        expect(task.rounds[0]).toMatchObject({ phase: "rejected", verdict: "FAIL", repaired: true, evaluation: { unmet: [2, 3] } });
        expect(task.rounds[1]).toMatchObject({
          phase: "accepted",
          verdict: "PASS",
          degrade_steps: ["utility", "verifier_second_pass"],
          plan: { utility: false, repair: false, executors: 1 },
        });
        const started = (await stack.api(`/v1/events?type=team_round_started&subject=${goal.body.task_id}`)).body.events;
        expect(started.map((e: any) => [e.payload.round, e.payload.spec_recheck])).toEqual([
          [1, "ok"],
          [2, "ok"],
        ]);
        const degraded = (await stack.api(`/v1/events?type=team_budget_degraded&subject=${goal.body.task_id}`)).body.events;
        expect(degraded.map((e: any) => [e.payload.round, e.payload.steps])).toEqual([[2, ["utility", "verifier_second_pass"]]]);
        expect(task.role_turns.filter((t: any) => t.round === 2).map((t: any) => t.role)).toEqual([
          "planner",
          "executor",
          "verifier",
          "evaluator",
        ]);
      } finally {
        await runner.stop();
        // Later tests in this file expect the gate's own measurement, not the test-only always_team.
        await stack.api("/v1/config/team", { method: "PUT", body: {} });
        await stack.api("/v1/config/dispatch", { method: "PUT", body: {} });
      }
    },
  );

  it(
    "loses no round when the runner is killed mid-round: the next runner takes the same round's job and the goal settles",
    { timeout: 240_000 },
    async () => {
      expect((await stack.api("/v1/config/runner", { method: "PUT", body: { lease_visibility_ms: 5_000 } })).status).toBe(200);
      await employee("dai");
      const killed = startRunner(stack.base, runnerToken, { FAKE_SCENARIO: "team", FAKE_CLAUDE_SCENARIO: "hang" });
      const home = killed.home;
      try {
        const goal = await stack.api("/v1/employees/dai/goals", { body: { title: "Write the notes", acceptance_criteria: CRITERIA } });
        const taskId = goal.body.task_id as string;
        // The employee's run is under way (its claude hangs), then the runner dies without a word.
        await waitFor(() => existsSync(join(home, "agents/dai/fake-claude.pids.json")), "the employee's claude to start", 90_000, 250);
        killed.child.kill("SIGKILL");
        await killed.exited;

        const next = startRunner(
          stack.base,
          runnerToken,
          { FAKE_SCENARIO: "team", FAKE_CLAUDE_WRITE_FILES: JSON.stringify(NOTES) },
          { home },
        );
        try {
          const task = await settled(stack, taskId);
          expect(task).toMatchObject({ status: "done", goal_loop: { rounds_used: 1 } });
          expect(task.rounds).toEqual([expect.objectContaining({ round_no: 1, phase: "accepted" })]);
          const work = task.role_turns.find((t: any) => t.role === "employee");
          const job = (await stack.api(`/v1/admin/jobs/${work.job_id}`)).body;
          // The same job, leased again after the dead runner's lease lapsed: one round, two attempts.
          expect(job).toMatchObject({ status: "completed", attempt: 2 });
        } finally {
          await next.stop();
        }
      } finally {
        await stack.api("/v1/config/runner", { method: "PUT", body: {} });
        rmSync(home, { recursive: true, force: true });
      }
    },
  );
});
