/**
 * Team-as-Agent end to end, the ways a round stops other than a verdict (issue 11: scaffold cleanup
 * on every terminal path): an operator settling the goal task mid-round (cancelled), a member's CLI
 * crashing (failed), and the runner itself being stopped with SIGTERM. The Worker under wrangler's
 * test harness, the real local-runner process, fake CLIs.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectAllDead, isAlive, readFakePids, waitFor } from "../runner/helpers/processes";
import { startRunner, startWorker } from "./stack";
import { GOAL, TEAM } from "./team-fixtures";

type Stack = Awaited<ReturnType<typeof startWorker>>;

const scaffolds = (home: string) => {
  const root = join(home, "agents/.ephemeral");
  return existsSync(root) ? readdirSync(root) : [];
};

async function until<T>(stack: Stack, path: string, done: (body: any) => T | undefined, what: string, timeoutMs = 90_000): Promise<T> {
  let last: any;
  return waitFor(
    async () => {
      last = (await stack.api(path)).body;
      return done(last);
    },
    `${what} (last: ${JSON.stringify(last)?.slice(0, 600)})`,
    timeoutMs,
    500,
  );
}

describe("a team round that stops without a verdict, on the real runner", () => {
  let stack: Stack;
  let runnerToken: string;

  beforeAll(async () => {
    stack = await startWorker();
    expect((await stack.api("/v1/config/team", { method: "PUT", body: TEAM })).status).toBe(200);
    runnerToken = (await stack.api("/v1/admin/runners", { body: { name: "team-stop-e2e" } })).body.token;
  });

  afterAll(async () => {
    await stack?.close();
  });

  async function goalWithHungExecutor(employee: string, extraEnv: Record<string, string> = {}) {
    expect(
      (
        await stack.api(`/v1/employees/${employee}`, {
          method: "PUT",
          body: { name: employee, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
        })
      ).status,
    ).toBeLessThan(300);
    const runner = startRunner(stack.base, runnerToken, { FAKE_SCENARIO: "team", ...extraEnv });
    const goal = await stack.api(`/v1/employees/${employee}/goals`, { body: GOAL });
    expect(goal.status, JSON.stringify(goal.body)).toBe(201);
    return { runner, taskId: goal.body.task_id as string };
  }

  it("cancels the round when an operator settles the goal task mid-stage: the runner stops the hung executor and removes its scaffold", async () => {
    const { runner, taskId } = await goalWithHungExecutor("aoi", { FAKE_CODEX_SCENARIO: "hang" });
    try {
      const workspace = join(runner.home, "agents/aoi");
      const pids = await waitFor(() => readFakePids(workspace, "codex"), "the executor's codex to start", 90_000, 250);
      expect(scaffolds(runner.home)).toEqual([expect.stringMatching(/-1-executor/)]);

      const settle = await stack.api(`/v1/tasks/${taskId}/settle`, {
        body: { status: "needs_human", pause_class: "blocked_needs_decision" },
      });
      expect(settle.status, JSON.stringify(settle.body)).toBe(200);
      const task = (await stack.api(`/v1/tasks/${taskId}`)).body;
      expect(task).toMatchObject({ status: "needs_human", pause_class: "blocked_needs_decision" });
      expect(task.rounds[0]).toMatchObject({ phase: "cancelled", outcome: { reason: "task_settled" } });

      // The runner's round check (every 15 s) hears the round is over: member killed, scaffold gone.
      await waitFor(() => !isAlive(pids.pid) && !isAlive(pids.grandchild_pid), "the executor's codex to be killed", 60_000, 250);
      await waitFor(() => scaffolds(runner.home).length === 0, "the executor's scaffold to be removed", 60_000, 250);
      const ended = await until(
        stack,
        `/v1/tasks/${taskId}`,
        (t) => t.role_turns?.find((r: any) => r.role === "executor"),
        "the executor's stage end to be recorded",
      );
      expect(ended).toMatchObject({ outcome: "failed", requested_runtime: "codex", failure_edge: "run", fault_side: "platform" });
      const after = (await stack.api(`/v1/tasks/${taskId}`)).body;
      expect(after.status).toBe("needs_human"); // the operator's settle stands
      expect(after.rounds[0].stages.map((s: any) => s.kind)).toEqual(["plan", "execute"]); // no verifier launched
      expect(runner.child.exitCode).toBeNull(); // the runner itself goes on
    } finally {
      await runner.stop();
    }
  });

  it("fails the stage of a crashing codex executor (and its replica) without moving to another vendor, parks the task, and leaves no scaffold", async () => {
    const { runner, taskId } = await goalWithHungExecutor("beni", { FAKE_CODEX_SCENARIO: "crash" });
    try {
      const task = await until(stack, `/v1/tasks/${taskId}`, (t) => (t.status !== "assigned" ? t : undefined), "the task to settle");
      expect(task).toMatchObject({ status: "needs_human" });
      const executor = task.role_turns.find((r: any) => r.role === "executor");
      // The CLI died before its final event: the run edge, the runtime's side; nobody else took the role.
      expect(executor).toMatchObject({ outcome: "failed", requested_runtime: "codex", failure_edge: "run", fault_side: "runtime" });
      // The replica step ran the executor once more on the same runtime; it crashed the same way.
      const executors = task.role_turns.filter((r: any) => r.role === "executor");
      expect(executors).toHaveLength(2);
      expect(executors.every((r: any) => r.requested_runtime === "codex" && r.outcome === "failed")).toBe(true);
      const failed = (await stack.api(`/v1/events?type=team_stage_failed&subject=${taskId}`)).body.events;
      expect(failed[0]?.payload).toMatchObject({ role: "executor", runtime: "codex", model: "gpt-5.5", reason: "team_stage_failed" });
      expect(scaffolds(runner.home)).toEqual([]);
    } finally {
      await runner.stop();
    }
  });

  it("after a SIGKILL of the runner mid-stage, the next runner on the host reaps the orphaned CLI and sweeps the scaffold once the round is over", async () => {
    const { runner: killed, taskId } = await goalWithHungExecutor("dai", { FAKE_CODEX_SCENARIO: "hang" });
    const home = killed.home;
    const pids = await waitFor(() => readFakePids(join(home, "agents/dai"), "codex"), "the executor's codex to start", 90_000, 250);
    killed.child.kill("SIGKILL");
    await killed.exited;
    expect(scaffolds(home)).toHaveLength(1); // nobody removed it: the runner died without a word

    // The operator gives up on the goal; the round is cancelled while no runner watches it.
    expect((await stack.api(`/v1/tasks/${taskId}/settle`, { body: { status: "failed" } })).status).toBe(200);
    const next = startRunner(stack.base, runnerToken, { FAKE_SCENARIO: "team" }, { home });
    try {
      await expectAllDead(pids); // the leftover process group is stopped before any job
      // The maintenance sweep asks the Worker with the scaffold's member token: refused, so it goes.
      await waitFor(() => scaffolds(home).length === 0, "the orphaned scaffold to be swept", 60_000, 250);
      expect(next.child.exitCode).toBeNull();
    } finally {
      await next.stop();
    }
  });

  it("on SIGTERM of the runner mid-stage kills the executor's CLI, removes its scaffold and hands the stage back", async () => {
    const { runner, taskId } = await goalWithHungExecutor("chie", { FAKE_CODEX_SCENARIO: "hang" });
    const workspace = join(runner.home, "agents/chie");
    const pids = await waitFor(() => readFakePids(workspace, "codex"), "the executor's codex to start", 90_000, 250);
    expect(scaffolds(runner.home)).toHaveLength(1);
    const home = runner.home;
    runner.child.kill("SIGTERM");
    expect(await runner.exited, runner.output()).toBe(0);
    await expectAllDead(pids);
    expect(scaffolds(home)).toEqual([]);
    await runner.stop();

    const events = (await stack.api(`/v1/events?type=team_stage_dispatched&subject=${taskId}`)).body.events;
    const jobId = events.find((e: any) => e.payload.role === "executor").payload.job_id;
    const job = (await stack.api(`/v1/admin/jobs/${jobId}`)).body;
    // Handed back for another attempt, not left leased to a runner that is gone; the round goes on.
    expect(job.status).not.toBe("leased");
    expect(job.error ?? job.last_error).toMatchObject({ code: "runner_shutdown" });
    expect((await stack.api(`/v1/tasks/${taskId}`)).body).toMatchObject({
      status: "assigned",
      rounds: [expect.objectContaining({ phase: "executing" })],
    });
  });
});
