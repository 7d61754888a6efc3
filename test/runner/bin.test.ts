/**
 * The real launcher, started the way an operator starts it, against a fake Worker.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workDirFor } from "../../local-runner/src/work-dir.ts";
import { startFakeServer } from "./helpers/fake-server.ts";
import { fakeClisDir, runnerBin, tempDir } from "./helpers/paths.ts";
import { expectAllDead, isAlive, readFakePids, waitFor } from "./helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of teardown.splice(0).reverse()) await fn();
});

interface Started {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startRunner(args: string[], env: NodeJS.ProcessEnv = {}): Started {
  // Started from a neutral cwd, not through npm, to prove the launcher finds Node 22 on its own.
  const child = spawn(runnerBin, args, {
    cwd: "/",
    env: { ...process.env, PATH: `${fakeClisDir}:${process.env.PATH}`, ...env },
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
  return { child, stderr: () => stderr, exited };
}

/** Cleanup for a failed assertion: never leave a hanging fake CLI behind the suite. */
function killQuietly(...pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

describe("crewplane-runner bin", () => {
  it("on SIGTERM kills the running CLI, reports runner_shutdown and exits 0", async () => {
    const server = await startFakeServer();
    teardown.push(() => server.close());
    const { dir: home, cleanup } = tempDir();
    teardown.push(cleanup);

    const runner = startRunner(["--url", server.url, "--home", home, "--concurrency", "1", "--runtimes", "offline,claude"], {
      CREWPLANE_RUNNER_TOKEN: server.token,
    });
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:hang]] never answers", timeout_ms: 60_000 } });
    const pids = await waitFor(() => readFakePids(workDirFor(home, job.job_id)), "the fake claude to start", 20_000);

    runner.child.kill("SIGTERM");
    const exit = await runner.exited;
    expect(exit, runner.stderr()).toEqual({ code: 0, signal: null });

    const fail = server.requestsTo("fail", job.job_id);
    expect(fail).toHaveLength(1);
    expect(fail[0]!.body).toMatchObject({ lease_id: job.lease_id(), error: { code: "runner_shutdown" }, retryable: true });
    expect(server.requestsTo("complete")).toHaveLength(0);
    await expectAllDead(pids);
    expect(runner.stderr()).toContain('"runtimes":["offline","claude"]');
  });

  it("on SIGTERM while long-polling, cancels that poll by its id so nothing it claimed is stranded", async () => {
    const server = await startFakeServer();
    teardown.push(() => server.close());
    const { dir: home, cleanup } = tempDir();
    teardown.push(cleanup);
    const runner = startRunner(["--url", server.url, "--token", server.token, "--home", home, "--runtimes", "offline"]);
    const poll = await waitFor(() => server.requests.find((r) => r.path === "/v1/runner/lease"), "a lease long-poll", 20_000);
    expect(poll.body.poll_id).toMatch(/^[A-Za-z0-9_-]{8,64}$/);

    runner.child.kill("SIGTERM");
    expect((await runner.exited).code).toBe(0);
    const cancels = server.requests.filter((r) => r.path.endsWith("/cancel"));
    expect(cancels.map((r) => r.path)).toEqual([`/v1/runner/polls/${poll.body.poll_id}/cancel`]);
    // --token keeps working for compatibility, with a warning that it is visible to other users.
    expect(runner.stderr()).toContain("runner.token_on_command_line");
  });

  it("keeps the token off its command line and out of the CLIs' environment", async () => {
    const server = await startFakeServer();
    teardown.push(() => server.close());
    const { dir: home, cleanup } = tempDir();
    teardown.push(cleanup);
    const runner = startRunner(["--url", server.url, "--home", home, "--runtimes", "claude"], { CREWPLANE_RUNNER_TOKEN: server.token });
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:hang]]", timeout_ms: 60_000 } });
    const pids = await waitFor(() => readFakePids(workDirFor(home, job.job_id)), "the fake claude to start", 20_000);
    teardown.push(() => killQuietly(pids.pid, pids.grandchild_pid));

    expect(readFileSync(`/proc/${runner.child.pid}/cmdline`, "utf8")).not.toContain(server.token);
    const cliEnv = readFileSync(`/proc/${pids.pid}/environ`, "utf8");
    expect(cliEnv).toContain("PATH=");
    expect(cliEnv).not.toContain("CREWPLANE_RUNNER_TOKEN");
    expect(cliEnv).not.toContain(server.token);
    expect(runner.stderr()).not.toContain("runner.token_on_command_line");
    runner.child.kill("SIGTERM");
    await runner.exited;
  });

  it("after a SIGKILL mid-job, the next runner of the same home kills the CLI left behind and logs it", async () => {
    const server = await startFakeServer();
    teardown.push(() => server.close());
    const { dir: home, cleanup } = tempDir();
    teardown.push(cleanup);
    const args = ["--url", server.url, "--home", home, "--runtimes", "claude"];
    const env = { CREWPLANE_RUNNER_TOKEN: server.token };
    const first = startRunner(args, env);
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:hang]]", timeout_ms: 60_000 } });
    const pids = await waitFor(() => readFakePids(workDirFor(home, job.job_id)), "the fake claude to start", 20_000);
    teardown.push(() => killQuietly(pids.pid, pids.grandchild_pid));
    const record = join(home, "run", `group-${pids.pid}.json`);
    expect(JSON.parse(readFileSync(record, "utf8"))).toMatchObject({ pid: pids.pid, pgid: pids.pid, job_id: job.job_id });

    first.child.kill("SIGKILL");
    await first.exited;
    // The bug this guards against: the CLI outlives its runner, re-parented to init.
    expect(isAlive(pids.pid)).toBe(true);
    expect(isAlive(pids.grandchild_pid)).toBe(true);

    const second = startRunner(args, env);
    await expectAllDead(pids);
    await waitFor(() => second.stderr().includes("run.group_killed"), "the kill to be logged", 20_000);
    const line = second
      .stderr()
      .split("\n")
      .find((l) => l.includes("run.group_killed"))!;
    expect(JSON.parse(line)).toMatchObject({ pid: pids.pid, job_id: job.job_id, command: expect.stringContaining("fake-clis/claude") });
    expect(existsSync(record)).toBe(false);
    // Its signal handlers are in place once it says it is starting the poll loop.
    await waitFor(() => second.stderr().includes("runner.starting"), "the second runner to start polling", 20_000);
    second.child.kill("SIGTERM");
    expect(await second.exited, second.stderr()).toEqual({ code: 0, signal: null });
  });

  it("on a second signal exits at once (130) and still takes its CLIs down", async () => {
    const server = await startFakeServer();
    teardown.push(() => server.close());
    const { dir: home, cleanup } = tempDir();
    teardown.push(cleanup);
    // The CLI ignores SIGTERM, so only the forced exit's SIGKILL can stop it in time.
    const runner = startRunner(["--url", server.url, "--home", home, "--runtimes", "claude"], {
      CREWPLANE_RUNNER_TOKEN: server.token,
      FAKE_IGNORE_SIGTERM: "1",
    });
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:hang]]", timeout_ms: 60_000 } });
    const pids = await waitFor(() => readFakePids(workDirFor(home, job.job_id)), "the fake claude to start", 20_000);
    teardown.push(() => killQuietly(pids.pid, pids.grandchild_pid));

    runner.child.kill("SIGTERM");
    await waitFor(() => runner.stderr().includes("runner.stopping"), "the graceful stop to begin");
    runner.child.kill("SIGTERM");
    expect((await runner.exited).code).toBe(130);
    expect(runner.stderr()).toContain("runner.forced_exit");
    await expectAllDead(pids);
  });

  it("exits 3 with a clear message when the token is rejected", async () => {
    const server = await startFakeServer();
    teardown.push(() => server.close());
    const { dir: home, cleanup } = tempDir();
    teardown.push(cleanup);
    const runner = startRunner(["--home", home], { CREWPLANE_URL: server.url, CREWPLANE_RUNNER_TOKEN: "not-the-token" });
    expect((await runner.exited).code).toBe(3);
    expect(runner.stderr()).toContain("runner.unauthorized");
  });

  it("exits 2 with usage on a bad command line", async () => {
    const runner = startRunner(["--url", "http://127.0.0.1:9"], { CREWPLANE_RUNNER_TOKEN: "" });
    expect((await runner.exited).code).toBe(2);
    expect(runner.stderr()).toContain("missing CREWPLANE_RUNNER_TOKEN");
    expect(runner.stderr()).toContain("Usage: crewplane-runner");
  });
});
