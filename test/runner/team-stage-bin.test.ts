/**
 * The real runner process with a team stage: its member's scaffold is gone after the runner's own
 * SIGTERM, and one left behind by a SIGKILLed runner is swept by the next runner once its round is
 * over (the Worker refuses the member token).
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ephemeralRoot } from "../../local-runner/src/members/scaffold.ts";
import { startFakeServer } from "./helpers/fake-server.ts";
import { startFakeTeamApi } from "./helpers/fake-team-api.ts";
import { fakeClisDir, runnerBin, tempDir } from "./helpers/paths.ts";
import { expectAllDead, readFakePids, waitFor } from "./helpers/processes.ts";
import { stagePayload } from "./helpers/team-stage.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of teardown.splice(0).reverse()) await fn();
});

async function stack() {
  const api = await startFakeTeamApi();
  teardown.push(() => api.close());
  const server = await startFakeServer({ forwardTo: api.url });
  teardown.push(() => server.close());
  const { dir: home, cleanup } = tempDir("crewplane-team-bin-");
  teardown.push(cleanup);
  return { api, server, home };
}

function startRunner(url: string, token: string, home: string, env: Record<string, string> = {}) {
  const child = spawn(runnerBin, ["--url", url, "--home", home, "--concurrency", "1", "--runtimes", "claude,codex"], {
    cwd: "/",
    env: { ...process.env, PATH: `${fakeClisDir}:${process.env.PATH}`, CREWPLANE_RUNNER_TOKEN: token, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  teardown.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, exited, stderr: () => stderr };
}

const scaffolds = (home: string) => (existsSync(ephemeralRoot(home)) ? readdirSync(ephemeralRoot(home)) : []);
const workspace = (home: string) => join(home, "agents/emp_1");

describe("a team stage on the runner process", () => {
  it("on SIGTERM kills the member, reports runner_shutdown and leaves no scaffold", async () => {
    const { api, server, home } = await stack();
    const runner = startRunner(server.url, server.token, home, { FAKE_SCENARIO: "hang" });
    const token = api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "executor" });
    const job = server.enqueue({ kind: "team_stage", payload: stagePayload({ token, runtime: "codex", stage: "execute" }) });
    const pids = await waitFor(() => readFakePids(workspace(home), "codex"), "the member's codex to start", 20_000);
    expect(scaffolds(home)).toEqual(["task_1-1-executor-stg_execute"]);

    runner.child.kill("SIGTERM");
    expect(await runner.exited, runner.stderr()).toEqual({ code: 0, signal: null });
    expect(server.requestsTo("fail", job.job_id)[0]?.body).toMatchObject({ error: { code: "runner_shutdown" }, retryable: true });
    await expectAllDead(pids);
    expect(scaffolds(home)).toEqual([]);
  });

  it("completes a stage over the runner protocol with the result the Worker reads", async () => {
    const { api, server, home } = await stack();
    const runner = startRunner(server.url, server.token, home, {
      FAKE_SCENARIO: "team",
      FAKE_CODEX_WRITE_FILES: JSON.stringify({ "notes/a.md": "alpha\n", "notes/b.md": "beta\n" }),
    });
    const token = api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "executor" });
    const job = server.enqueue({ kind: "team_stage", payload: stagePayload({ token, runtime: "codex", stage: "execute" }) });
    const complete = await server.waitForRequest("complete", job.job_id, 30_000);
    expect(complete.body.result).toMatchObject({
      runtime: "codex",
      artifact_receipts: [
        { path: "notes/a.md", state: "exists", bytes: 6 },
        { path: "notes/b.md", state: "exists", bytes: 5 },
      ],
      evidence: { mcp_calls: 1 },
    });
    expect(JSON.stringify(complete.body)).not.toContain(token);
    expect(api.packets).toHaveLength(1);
    expect(scaffolds(home)).toEqual([]);
    runner.child.kill("SIGTERM");
    await runner.exited;
  });

  it("after a SIGKILL mid-stage, the next runner sweeps the scaffold once the round is over, not before", async () => {
    const { api, server, home } = await stack();
    const first = startRunner(server.url, server.token, home, { FAKE_SCENARIO: "hang" });
    const token = api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "planner" });
    server.enqueue({ kind: "team_stage", payload: stagePayload({ token, runtime: "claude", stage: "plan" }) });
    const pids = await waitFor(() => readFakePids(workspace(home), "claude"), "the member's claude to start", 20_000);
    first.child.kill("SIGKILL");
    await first.exited;
    expect(scaffolds(home)).toEqual(["task_1-1-planner-stg_plan"]);

    // The round is still going: the next runner kills the orphaned CLI but keeps the scaffold.
    const asked = () => api.requests.filter((r) => r.path === "/v1/team/member").length;
    const before = asked();
    const second = startRunner(server.url, server.token, home);
    await expectAllDead(pids);
    await waitFor(() => asked() > before, "the sweep to ask about the round", 20_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(scaffolds(home)).toEqual(["task_1-1-planner-stg_plan"]);
    second.child.kill("SIGTERM");
    await second.exited;

    // The round ended (its member tokens are revoked): the next runner's first sweep removes it.
    api.revoke(token);
    const third = startRunner(server.url, server.token, home);
    await waitFor(() => scaffolds(home).length === 0, "the scaffold to be swept", 20_000);
    await waitFor(() => third.stderr().includes("scaffold.swept"), "the sweep to be logged", 5_000);
    third.child.kill("SIGTERM");
    expect((await third.exited).code).toBe(0);
  });
});
