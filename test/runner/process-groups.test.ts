/**
 * The run-dir registry against real processes: what a runner that starts after a crash kills, and
 * what it must leave alone (a recycled pid, another program, a live runner's groups).
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../local-runner/src/logger.ts";
import { createGroupRegistry, reapLeftoverGroups, runDirFor, runsCommand, withJobScope } from "../../local-runner/src/process-groups.ts";
import type { GroupRecord } from "../../local-runner/src/process-groups.ts";
import { parseStat, readStat } from "../../local-runner/src/proc.ts";
import { tempDir } from "./helpers/paths.ts";
import { isAlive, waitFor } from "./helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of teardown.splice(0).reverse()) await fn();
});

function home(): string {
  const { dir, cleanup } = tempDir("crewplane-run-test-");
  teardown.push(cleanup);
  return dir;
}

/**
 * A stand-in for a model CLI: a detached group leader (like process-runner spawns) that starts a
 * grandchild in its own group, as a CLI's tool or MCP server would. Returns both pids once both are
 * fully set up: the grandchild writes its pid itself, after installing its SIGTERM handler, and the
 * leader installs its own before spawning (a signal can arrive the moment the test reads the pid).
 */
async function spawnGroup(options: { ignoreTerm?: boolean; leaderExits?: boolean } = {}) {
  const { dir } = tempDir("crewplane-group-");
  const pidFile = join(dir, "grandchild.pid");
  const ignore = options.ignoreTerm ? "process.on('SIGTERM', () => {});" : "";
  const grandchildCode = `${ignore} require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1 << 30);`;
  const leaderCode = `
    ${ignore}
    const g = require("node:child_process").spawn(process.execPath, ["-e", ${JSON.stringify(grandchildCode)}], { stdio: "ignore" });
    ${options.leaderExits ? "g.unref(); setTimeout(() => process.exit(0), 1000);" : "setInterval(() => {}, 1 << 30);"}
  `;
  const leader = spawn(process.execPath, ["-e", leaderCode], { detached: true, stdio: "ignore" });
  leader.unref();
  teardown.push(() => killQuietly(leader.pid!));
  const grandchild = Number(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8"), "the grandchild pid"));
  teardown.push(() => killQuietly(grandchild));
  return { leader: leader.pid!, grandchild };
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Records `pid` as spawned by a runner that is no longer running (our pid, a start time that is not ours). */
function recordFromDeadRunner(homeDir: string, pid: number, patch: Partial<GroupRecord> = {}) {
  const registry = createGroupRegistry(homeDir);
  withJobScope("job-42", () => registry.record({ pid, command: process.execPath, argv0: process.execPath }));
  const file = join(runDirFor(homeDir), `group-${pid}.json`);
  const record = JSON.parse(readFileSync(file, "utf8")) as GroupRecord;
  const own = readStat(process.pid)!.startTicks;
  writeFileSync(file, JSON.stringify({ ...record, runner: { pid: process.pid, start_ticks: own + 1 }, ...patch }));
  return { file, record: { ...record, ...patch } };
}

describe("parseStat", () => {
  it("reads the fields after the last parenthesis, whatever the command name holds", () => {
    const line = "4242 (we ird) (name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000000 200 18446744073709551615";
    expect(parseStat(line)).toEqual({ pid: 4242, state: "S", ppid: 1, pgid: 4242, startTicks: 987654 });
  });
});

describe("runsCommand", () => {
  const record = { command: "/opt/bin/claude", argv0: "/opt/bin/claude" };
  it("accepts the binary itself and a script behind its interpreter", () => {
    expect(runsCommand(["/opt/bin/claude", "-p"], record)).toBe(true);
    expect(runsCommand(["node", "/opt/bin/claude", "-p"], record)).toBe(true);
  });
  it("refuses another program", () => {
    expect(runsCommand(["/usr/bin/vim", "/opt/bin/claude.txt"], record)).toBe(false);
  });
});

describe("run-dir registry", () => {
  it("records a spawned group owner-only with its pid, command, start time and job, and forgets it on remove", async () => {
    const dir = home();
    const { leader } = await spawnGroup();
    const registry = createGroupRegistry(dir);
    withJobScope("job-7", () => registry.record({ pid: leader, command: process.execPath, argv0: process.execPath }));

    const file = join(runDirFor(dir), `group-${leader}.json`);
    expect(statSync(runDirFor(dir)).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({
      pid: leader,
      pgid: leader,
      command: process.execPath,
      argv0: process.execPath,
      start_ticks: readStat(leader)!.startTicks,
      job_id: "job-7",
      runner: { pid: process.pid },
    });
    registry.remove(leader);
    expect(existsSync(file)).toBe(false);
  });

  it("kills a group a dead runner left behind, grandchildren included, and logs it", async () => {
    const dir = home();
    const pids = await spawnGroup();
    const { file } = recordFromDeadRunner(dir, pids.leader);
    const logger = createMemoryLogger();

    const actions = await reapLeftoverGroups(dir, { logger });
    expect(actions).toMatchObject([{ action: "killed", signal: "SIGTERM" }]);
    await waitFor(() => !isAlive(pids.leader) && !isAlive(pids.grandchild), "the group to die");
    expect(existsSync(file)).toBe(false);
    expect(logger.records.find((r) => r.event === "run.group_killed")).toMatchObject({
      pid: pids.leader,
      command: process.execPath,
      job_id: "job-42",
    });
  });

  it("escalates to SIGKILL for a group that ignores SIGTERM", async () => {
    const dir = home();
    const pids = await spawnGroup({ ignoreTerm: true });
    recordFromDeadRunner(dir, pids.leader);
    const actions = await reapLeftoverGroups(dir, { logger: createMemoryLogger(), graceMs: 300 });
    expect(actions).toMatchObject([{ action: "killed", signal: "SIGKILL" }]);
    await waitFor(() => !isAlive(pids.leader) && !isAlive(pids.grandchild), "the group to die");
  });

  it("never kills a recycled pid: same number, another start time", async () => {
    const dir = home();
    const pids = await spawnGroup();
    const { file } = recordFromDeadRunner(dir, pids.leader, { start_ticks: readStat(pids.leader)!.startTicks - 1 });
    const logger = createMemoryLogger();

    expect(await reapLeftoverGroups(dir, { logger })).toMatchObject([{ action: "skipped", reason: expect.stringContaining("recycled") }]);
    expect(isAlive(pids.leader)).toBe(true);
    expect(isAlive(pids.grandchild)).toBe(true);
    expect(existsSync(file)).toBe(false);
    expect(logger.records.find((r) => r.event === "run.group_skipped")).toMatchObject({ pid: pids.leader });
  });

  it("never kills a pid that now runs another command", async () => {
    const dir = home();
    const pids = await spawnGroup();
    recordFromDeadRunner(dir, pids.leader, { command: "/opt/bin/claude", argv0: "/opt/bin/claude" });
    expect(await reapLeftoverGroups(dir, { logger: createMemoryLogger() })).toMatchObject([
      { action: "skipped", reason: expect.stringContaining("another command") },
    ]);
    expect(isAlive(pids.leader)).toBe(true);
  });

  it("never kills a pid whose start time was not recorded", async () => {
    const dir = home();
    const pids = await spawnGroup();
    recordFromDeadRunner(dir, pids.leader, { start_ticks: null });
    expect(await reapLeftoverGroups(dir, { logger: createMemoryLogger() })).toMatchObject([{ action: "skipped" }]);
    expect(isAlive(pids.leader)).toBe(true);
  });

  it("leaves alone the groups of a runner that is still running", async () => {
    const dir = home();
    const pids = await spawnGroup();
    const { file } = recordFromDeadRunner(dir, pids.leader, {
      runner: { pid: process.pid, start_ticks: readStat(process.pid)!.startTicks },
    });
    expect(await reapLeftoverGroups(dir, { logger: createMemoryLogger() })).toMatchObject([
      { action: "skipped", reason: expect.stringContaining("still running") },
    ]);
    expect(isAlive(pids.leader)).toBe(true);
    expect(existsSync(file)).toBe(true);
  });

  it("kills the members a dead leader left in its group", async () => {
    const dir = home();
    const pids = await spawnGroup({ leaderExits: true });
    const registry = createGroupRegistry(dir);
    registry.record({ pid: pids.leader, command: process.execPath, argv0: process.execPath });
    const file = join(runDirFor(dir), `group-${pids.leader}.json`);
    const record = JSON.parse(readFileSync(file, "utf8")) as GroupRecord;
    writeFileSync(file, JSON.stringify({ ...record, runner: { pid: process.pid, start_ticks: 0 } }));
    await waitFor(() => !isAlive(pids.leader), "the leader to exit on its own");
    expect(isAlive(pids.grandchild)).toBe(true);

    expect(await reapLeftoverGroups(dir, { logger: createMemoryLogger() })).toMatchObject([
      { action: "killed", members: [pids.grandchild] },
    ]);
    await waitFor(() => !isAlive(pids.grandchild), "the orphaned member to die");
  });

  it("removes a stale record whose group is gone, and unreadable or half-written ones", async () => {
    const dir = home();
    const gone = spawn(process.execPath, ["-e", ""], { detached: true, stdio: "ignore" });
    await new Promise((r) => gone.once("exit", r));
    recordFromDeadRunner(dir, gone.pid!, { start_ticks: 1 });
    writeFileSync(join(runDirFor(dir), "group-1.json"), "{not json");
    writeFileSync(join(runDirFor(dir), "group-2.json.tmp"), "{}");
    const logger = createMemoryLogger();

    const actions = await reapLeftoverGroups(dir, { logger });
    expect(actions.map((a) => a.action).sort()).toEqual(["removed", "removed", "removed"]);
    expect(readdirSync(runDirFor(dir))).toEqual([]);
    expect(logger.records.filter((r) => r.event === "run.record_removed")).toHaveLength(3);
  });
});
