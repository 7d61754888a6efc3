/**
 * Work dirs: owner-only whatever the umask, and swept by age with an injected clock.
 */
import { mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../local-runner/src/logger.ts";
import { runProcess } from "../../local-runner/src/process-runner.ts";
import {
  createWorkDir,
  ENDED_MARKER,
  markWorkDirEnded,
  removeWorkDir,
  sweepWorkDirs,
  workDirFor,
  workRootFor,
} from "../../local-runner/src/work-dir.ts";
import { tempDir } from "./helpers/paths.ts";

const HOUR = 3_600_000;
const NOW = Date.parse("2026-12-01T12:00:00.000Z");

const teardown: Array<() => unknown> = [];
let savedUmask: number;
beforeEach(() => {
  // The most permissive common umask: modes must not depend on the user's setting.
  savedUmask = process.umask(0o022);
});
afterEach(async () => {
  process.umask(savedUmask);
  for (const fn of teardown.splice(0).reverse()) await fn();
});

function home(): string {
  const { dir, cleanup } = tempDir("crewplane-work-test-");
  teardown.push(cleanup);
  return dir;
}

const mode = (path: string) => statSync(path).mode & 0o777;
const exists = (path: string) => {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
};

describe("work dirs", () => {
  it("are created 0700 under a 0700 work root, also when they already existed with looser modes", async () => {
    const h = home();
    mkdirSync(join(h, "work", "job-1"), { recursive: true, mode: 0o755 });
    const dir = await createWorkDir(h, "job-1");
    expect(dir).toBe(workDirFor(h, "job-1"));
    expect(mode(workRootFor(h))).toBe(0o700);
    expect(mode(dir)).toBe(0o700);
  });

  it("get the CLI's output files as 0600", async () => {
    const dir = await createWorkDir(home(), "job-2");
    const outcome = await runProcess({
      command: process.execPath,
      args: ["-e", "console.log('out'); console.error('err')"],
      cwd: dir,
      timeoutMs: 20_000,
      stdoutPath: join(dir, "stream.jsonl"),
      stderrPath: join(dir, "stderr.log"),
    });
    expect(outcome.termination).toBe("exited");
    expect(readFileSync(join(dir, "stream.jsonl"), "utf8")).toBe("out\n");
    expect(mode(join(dir, "stream.jsonl"))).toBe(0o600);
    expect(mode(join(dir, "stderr.log"))).toBe(0o600);
  });

  it("are removed whole on success; a failure leaves a 0600 marker with the end time and code", async () => {
    const h = home();
    const ok = await createWorkDir(h, "job-ok");
    writeFileSync(join(ok, "stream.jsonl"), "{}\n");
    await removeWorkDir(h, "job-ok");
    expect(exists(ok)).toBe(false);

    const bad = await createWorkDir(h, "job-bad");
    await markWorkDirEnded(h, "job-bad", NOW, "cli_error");
    expect(JSON.parse(readFileSync(join(bad, ENDED_MARKER), "utf8"))).toEqual({
      job_id: "job-bad",
      ended_at: "2026-12-01T12:00:00.000Z",
      code: "cli_error",
    });
    expect(mode(join(bad, ENDED_MARKER))).toBe(0o600);
  });

  it("a job that never had a dir gets no marker and no dir", async () => {
    const h = home();
    await markWorkDirEnded(h, "offline-job", NOW, "unsupported_job");
    expect(exists(workDirFor(h, "offline-job"))).toBe(false);
  });
});

describe("sweepWorkDirs", () => {
  async function failedAt(h: string, jobId: string, endedMs: number) {
    await createWorkDir(h, jobId);
    await markWorkDirEnded(h, jobId, endedMs, "timeout");
  }

  it("removes failed dirs older than keep_failed_work_hours and keeps younger ones", async () => {
    const h = home();
    await failedAt(h, "old", NOW - 25 * HOUR);
    await failedAt(h, "young", NOW - 23 * HOUR);
    const logger = createMemoryLogger();

    const report = await sweepWorkDirs(h, { nowMs: NOW, keepHours: 24, isRunning: () => false, logger });
    expect(report).toEqual({ removed: ["old"], kept: 1 });
    expect(exists(workDirFor(h, "old"))).toBe(false);
    expect(exists(workDirFor(h, "young"))).toBe(true);
    expect(logger.records.find((r) => r.event === "work.swept")).toMatchObject({ keep_failed_work_hours: 24 });
  });

  it("follows the setting: 1 hour removes what 24 hours keeps", async () => {
    const h = home();
    await failedAt(h, "two-hours", NOW - 2 * HOUR);
    expect((await sweepWorkDirs(h, { nowMs: NOW, keepHours: 24, isRunning: () => false })).removed).toEqual([]);
    expect((await sweepWorkDirs(h, { nowMs: NOW, keepHours: 1, isRunning: () => false })).removed).toEqual(["two-hours"]);
  });

  it("dates a dir without a marker (its runner died mid-job) by its newest file", async () => {
    const h = home();
    const dir = await createWorkDir(h, "crashed");
    writeFileSync(join(dir, "stream.jsonl"), "{}\n");
    const old = (NOW - 30 * HOUR) / 1000;
    utimesSync(join(dir, "stream.jsonl"), old, old);
    utimesSync(dir, old, old);
    const recent = await createWorkDir(h, "recent-crash");
    writeFileSync(join(recent, "stream.jsonl"), "{}\n");
    utimesSync(recent, old, old);
    // An old dir whose CLI was still writing an hour ago: its last change counts, not the dir's.
    const hourAgo = (NOW - HOUR) / 1000;
    utimesSync(join(recent, "stream.jsonl"), hourAgo, hourAgo);

    const report = await sweepWorkDirs(h, { nowMs: NOW, keepHours: 24, isRunning: () => false });
    expect(report.removed).toEqual(["crashed"]);
  });

  it("never touches the dir of a running job, however old", async () => {
    const h = home();
    await failedAt(h, "running", NOW - 100 * HOUR);
    const report = await sweepWorkDirs(h, { nowMs: NOW, keepHours: 24, isRunning: (name) => name === "running" });
    expect(report).toEqual({ removed: [], kept: 1 });
  });

  it("removes a secret file from a kept dir of a job that is not running, without redating the dir", async () => {
    const h = home();
    const crashed = await createWorkDir(h, "crashed");
    writeFileSync(join(crashed, "employee-identity.json"), "{}\n");
    writeFileSync(join(crashed, "stream.jsonl"), "{}\n");
    const old = (NOW - 2 * HOUR) / 1000;
    for (const path of [join(crashed, "employee-identity.json"), join(crashed, "stream.jsonl"), crashed]) utimesSync(path, old, old);
    const running = await createWorkDir(h, "running");
    writeFileSync(join(running, "employee-identity.json"), "{}\n");
    const logger = createMemoryLogger();

    const options = { nowMs: NOW, keepHours: 24, logger, secretFiles: ["employee-identity.json"] };
    const report = await sweepWorkDirs(h, { ...options, isRunning: (name) => name === "running" });
    expect(report).toEqual({ removed: [], kept: 2 });
    expect(exists(join(crashed, "employee-identity.json"))).toBe(false);
    expect(exists(join(crashed, "stream.jsonl"))).toBe(true);
    expect(exists(join(running, "employee-identity.json"))).toBe(true);
    expect(statSync(crashed).mtimeMs).toBe(old * 1000);
    expect(logger.records.filter((r) => r.event === "work.secret_removed")).toHaveLength(1);
    // Its age still counts from its last real change: 23 hours later it goes.
    expect((await sweepWorkDirs(h, { ...options, nowMs: NOW + 23 * HOUR, isRunning: (n) => n === "running" })).removed).toEqual([
      "crashed",
    ]);
  });

  it("does nothing when there is no work root yet", async () => {
    expect(await sweepWorkDirs(home(), { nowMs: NOW, keepHours: 24, isRunning: () => false })).toEqual({ removed: [], kept: 0 });
  });
});
