/**
 * The team 2×2 end to end (issue 22, planner cells): the Worker under wrangler's test harness, the real
 * local-runner process and the fake CLIs in their `team` scenario. The operator asks for the planner
 * role with a weak/strong compare and a fixed verifier; per case the Worker opens four real team rounds
 * of the employee (planner weak/strong × executor weak/strong), each in its own isolated copy of the
 * employee's workspace on the runner; when a round ends, the fixed verifier reads what that arm left
 * in its workspace and answers PASS or FAIL; the report splits the outcome between the two roles.
 *
 * What each model does comes from `--model` in the argv the runner built, as with a real CLI
 * (FAKE_<NAME>_MODEL_<MODEL>, lib/fake-common.mjs modelEnv): the weak model plans nothing (its planner
 * hands off no packet) and, as executor, writes notes instead of the file the case asks for; the strong
 * model plans one subtask and writes `.env.example`. The fixed verifier (the fake claude as `# Role:
 * verifier`) judges the workspace's receipts the runner appended. Nothing is scripted on the Worker.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRunner, startWorker, type RunnerProcess } from "./stack";

type Stack = Awaited<ReturnType<typeof startWorker>>;

const WEAK = { runtime: "codex", model: "gpt-5.5-mini" } as const;
const STRONG = { runtime: "codex", model: "gpt-5.5" } as const;
const JUDGE = { runtime: "claude", model: "claude-opus-4-5" } as const;
const CASE = "config-edits/env-example";
const ENV_EXAMPLE = "API_URL=\nAPI_TOKEN=\n";

describe("the team 2×2 on the real runner", () => {
  let stack: Stack;
  let runner: RunnerProcess;

  beforeAll(async () => {
    stack = await startWorker();
    const token = (await stack.api("/v1/admin/runners", { body: { name: "team-2x2-e2e" } })).body.token;
    runner = startRunner(stack.base, token, {
      FAKE_SCENARIO: "team",
      FAKE_TEAM_PLAN_MODEL_GPT_5_5_MINI: "[]",
      FAKE_WRITE_FILES_MODEL_GPT_5_5: JSON.stringify({ ".env.example": ENV_EXAMPLE }),
      FAKE_WRITE_FILES_MODEL_GPT_5_5_MINI: JSON.stringify({ "notes.md": "Read .dev.vars; did not get to the example file.\n" }),
    });
    const put = await stack.api("/v1/employees/mio", {
      method: "PUT",
      body: { name: "Mio", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
    });
    expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
    // The team's own verifier and synthesis stay claude (another family than the codex executor).
    const team = {
      enabled: true,
      roles: { verifier: { runtime: "claude", model: "claude-haiku-4-5" }, utility: { runtime: "claude", model: "claude-haiku-4-5" } },
    };
    expect((await stack.api("/v1/config/team", { method: "PUT", body: team })).status).toBe(200);
  });

  afterAll(async () => {
    await runner?.stop();
    await stack?.close();
  });

  it("runs the four arms as real team rounds in isolated workspaces, judges each with the fixed verifier, and reports the split", async () => {
    const started = await stack.api("/v1/eval/matrix", {
      body: {
        roles: ["planner"],
        compare: { weak: WEAK, strong: STRONG },
        team_2x2: { verifier: JUDGE },
        employee_id: "mio",
        cases: [CASE],
      },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toMatchObject({ total_jobs: 4, declared_resolution: { team_2x2: { rows: 1, achievable_mde: null } } });
    const runId = started.body.run_id as string;

    let view: any;
    const deadline = Date.now() + 240_000;
    for (;;) {
      view = (await stack.api(`/v1/eval/matrix/${runId}`)).body;
      if (view.status !== "running") break;
      if (Date.now() > deadline) throw new Error(`run still running: ${JSON.stringify(view.progress)}\n${runner.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(view.status).toBe("done");
    expect(view.progress).toMatchObject({ total: 4, done: 4 });
    // Only the strong planner with the strong executor leaves the example file: v_SS = 1, the others 0.
    expect(view.report.team_2x2).toMatchObject({
      complete_rows: 1,
      incomplete_rows: 0,
      arms: { weak_weak: 0, strong_weak: 0, weak_strong: 0, strong_strong: 1 },
      planner_shapley: 0.5,
      executor_shapley: 0.5,
      // One row has no spread: which role to invest in first is not resolved by this sample.
      invest_first: "unresolved",
      reason: "degenerate_interval",
    });
    expect(view.report.header.planner).toBe("deferred");

    // Every arm worked in its own copy: the case's fixture in each, the example file only where the
    // strong pair ran, and nothing in the employee's own workspace.
    const arms = await Promise.all(
      [1, 2, 3, 4].map(async (seq) => {
        const dir = join(runner.home, "eval-workspaces", `${runId}.${seq}`);
        return { seq, dir, fixture: existsSync(join(dir, ".dev.vars")), example: existsSync(join(dir, ".env.example")) };
      }),
    );
    expect(arms.every((a) => a.fixture)).toBe(true);
    expect(arms.filter((a) => a.example)).toHaveLength(1);
    const ss = arms.find((a) => a.example)!;
    expect(readFileSync(join(ss.dir, ".env.example"), "utf8")).toBe(ENV_EXAMPLE);
    expect(existsSync(join(runner.home, "agents/mio/.env.example"))).toBe(false);
    expect(existsSync(join(runner.home, "agents/mio/.dev.vars"))).toBe(false);

    // The arms were real rounds: planner, and where the plan held, executor and the team's verifier.
    const tasks = (await stack.api(`/v1/events?type=team_stage_dispatched&limit=200`)).body.events.map((e: any) => e.payload);
    const roles = new Set(tasks.map((p: any) => `${p.role}`));
    expect(roles).toEqual(new Set(["planner", "executor", "verifier", "utility"]));
  }, 300_000);
});
