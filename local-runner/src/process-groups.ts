/**
 * The run-dir registry: every process group the runner spawns is recorded as
 * `<home>/run/group-<pid>.json` (pid/pgid, command and argv[0], start time, job id) and the file is
 * removed once the group is gone. A runner that is SIGKILLed cannot clean up after itself, so the
 * next runner of the same home reads what is left and kills those groups, but only after checking
 * that the pid still runs the recorded command and started at the recorded moment: a recycled pid
 * (another program that got the same number) is never signalled.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import type { Logger } from "./logger.ts";
import { groupMembers, isRunning, procAvailable, readBootId, readCmdline, readStat } from "./proc.ts";

const RECORD_PREFIX = "group-";
const RECORD_SUFFIX = ".json";
const DEFAULT_KILL_GRACE_MS = 2000;
/** After SIGKILL the kernel still needs a moment to tear the processes down. */
const SIGKILL_SETTLE_MS = 2000;
const POLL_MS = 50;

export const groupRecordSchema = z.object({
  version: z.literal(1),
  pid: z.number().int().positive(),
  pgid: z.number().int().positive(),
  /** The executable as spawned (absolute path). */
  command: z.string().min(1),
  argv0: z.string().min(1),
  started_at: z.string(),
  /** /proc start time of the leader; null when it could not be read (then it is never killed). */
  start_ticks: z.number().int().nonnegative().nullable(),
  boot_id: z.string().nullable(),
  job_id: z.string().nullable(),
  /** The runner that spawned it; a record whose runner still runs is that runner's business. */
  runner: z.object({ pid: z.number().int().positive(), start_ticks: z.number().int().nonnegative().nullable() }),
});
export type GroupRecord = z.infer<typeof groupRecordSchema>;

export interface SpawnedGroup {
  /** The leader's pid; spawned detached, so it is also the group id. */
  pid: number;
  command: string;
  argv0: string;
}

/** What process-runner needs: note a group when it is spawned, forget it once it is gone. */
export interface GroupRecorder {
  record(group: SpawnedGroup): void;
  remove(pid: number): void;
}

/** The runner's own view: it can also signal every group it still has, when it must exit at once. */
export interface GroupRegistry extends GroupRecorder {
  /** Signals every live recorded group synchronously (a forced exit cannot wait for anything). */
  signalAll(signal: NodeJS.Signals): number[];
}

export const runDirFor = (home: string): string => join(home, "run");

const jobScope = new AsyncLocalStorage<string>();

/** Runs `fn` with `jobId` attached to every process group spawned inside it (any job kind). */
export function withJobScope<T>(jobId: string, fn: () => T): T {
  return jobScope.run(jobId, fn);
}

/** `<home>/run/` owner-only, created if missing. */
export function ensureRunDir(home: string): string {
  const dir = runDirFor(home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

export function createGroupRegistry(home: string, options: { logger?: Logger; now?: () => number } = {}): GroupRegistry {
  const dir = ensureRunDir(home);
  const now = options.now ?? Date.now;
  const bootId = readBootId() ?? null;
  const runner = { pid: process.pid, start_ticks: readStat(process.pid)?.startTicks ?? null };
  const fileOf = (pid: number): string => join(dir, `${RECORD_PREFIX}${pid}${RECORD_SUFFIX}`);
  const live = new Set<number>();

  return {
    record(group) {
      live.add(group.pid);
      const record: GroupRecord = {
        version: 1,
        pid: group.pid,
        pgid: group.pid,
        command: group.command,
        argv0: group.argv0,
        started_at: new Date(now()).toISOString(),
        // Read right after spawn: the start time is fixed at fork, so exec has no effect on it.
        start_ticks: readStat(group.pid)?.startTicks ?? null,
        boot_id: bootId,
        job_id: jobScope.getStore() ?? null,
        runner,
      };
      // Synchronous and atomic (write, then rename) so a runner killed at any instant leaves
      // either no file or a whole one.
      const file = fileOf(group.pid);
      try {
        writeFileSync(`${file}.tmp`, `${JSON.stringify(record)}\n`, { mode: 0o600 });
        renameSync(`${file}.tmp`, file);
      } catch (err) {
        options.logger?.warn("run.record_failed", { pid: group.pid, error: err, consequence: "a crash would leave this group unreaped" });
      }
    },
    remove(pid) {
      live.delete(pid);
      rmSync(fileOf(pid), { force: true });
    },
    signalAll(signal) {
      // The records stay: if a group survives this, the next runner still finds and reaps it.
      for (const pgid of live) signalGroup(pgid, signal);
      return [...live];
    },
  };
}

export type ReapAction =
  | { action: "killed"; record: GroupRecord; signal: "SIGTERM" | "SIGKILL"; members: number[] }
  | { action: "skipped"; record: GroupRecord; reason: string }
  | { action: "removed"; record: GroupRecord | undefined; file: string; reason: string };

/**
 * Kills the process groups a previous runner of this home left behind, then removes their
 * records. Each decision is logged (`run.group_killed`, `run.group_skipped`, `run.record_removed`).
 */
export async function reapLeftoverGroups(home: string, options: { logger: Logger; graceMs?: number }): Promise<ReapAction[]> {
  const dir = ensureRunDir(home);
  const { logger } = options;
  const files = readdirSync(dir).filter((name) => name.startsWith(RECORD_PREFIX));
  if (files.length === 0) return [];
  const canVerify = procAvailable();
  const bootId = readBootId() ?? null;

  const actions = await Promise.all(
    files.map(async (name): Promise<ReapAction> => {
      const file = join(dir, name);
      if (!name.endsWith(RECORD_SUFFIX)) {
        // A `.tmp` from a runner killed between write and rename: its group was never recorded whole.
        rmSync(file, { force: true });
        return { action: "removed", record: undefined, file, reason: "incomplete record" };
      }
      const record = readRecord(file);
      if (!record) {
        rmSync(file, { force: true });
        return { action: "removed", record: undefined, file, reason: "unreadable record" };
      }
      const verdict = canVerify ? judge(record, bootId) : { kind: "skip" as const, reason: "cannot verify processes without /proc" };
      if (verdict.kind === "keep") return { action: "skipped", record, reason: verdict.reason };
      if (verdict.kind === "skip") {
        // Not ours any more (or unknowable): never signal it, and stop carrying the record around.
        rmSync(file, { force: true });
        return { action: "skipped", record, reason: verdict.reason };
      }
      if (verdict.kind === "gone") {
        rmSync(file, { force: true });
        return { action: "removed", record, file, reason: verdict.reason };
      }
      const signal = await killGroup(record.pgid, options.graceMs ?? DEFAULT_KILL_GRACE_MS);
      rmSync(file, { force: true });
      return { action: "killed", record, signal, members: verdict.members };
    }),
  );

  for (const a of actions) {
    const who = a.record
      ? { pid: a.record.pid, pgid: a.record.pgid, command: a.record.command, job_id: a.record.job_id, started_at: a.record.started_at }
      : {};
    if (a.action === "killed")
      logger.warn("run.group_killed", { ...who, signal: a.signal, members: a.members, note: "left behind by a previous runner" });
    else if (a.action === "skipped") logger.info("run.group_skipped", { ...who, reason: a.reason });
    else logger.info("run.record_removed", { ...who, file: a.file, reason: a.reason });
  }
  return actions;
}

type Verdict =
  | { kind: "kill"; members: number[] }
  | { kind: "skip"; reason: string }
  | { kind: "keep"; reason: string }
  | { kind: "gone"; reason: string };

/** Whether the recorded group is still the one our predecessor started, decided from /proc. */
function judge(record: GroupRecord, bootId: string | null): Verdict {
  if (record.boot_id !== null && bootId !== null && record.boot_id !== bootId) {
    return { kind: "gone", reason: "recorded before the last reboot" };
  }
  const owner = readStat(record.runner.pid);
  if (isRunning(owner) && record.runner.start_ticks !== null && owner.startTicks === record.runner.start_ticks) {
    return { kind: "keep", reason: `its runner (pid ${record.runner.pid}) is still running` };
  }
  const leader = readStat(record.pid);
  if (isRunning(leader)) {
    if (record.start_ticks === null) return { kind: "skip", reason: "start time was not recorded, so the pid cannot be verified" };
    if (leader.startTicks !== record.start_ticks) return { kind: "skip", reason: "pid was recycled (its start time differs)" };
    const argv = readCmdline(record.pid);
    if (!argv || !runsCommand(argv, record)) {
      return { kind: "skip", reason: `pid runs another command now (${(argv ?? []).slice(0, 2).join(" ") || "unknown"})` };
    }
    if (leader.pgid !== record.pgid) return { kind: "skip", reason: `pid left its process group (now ${leader.pgid})` };
    return { kind: "kill", members: groupMembers(record.pgid).map((m) => m.pid) };
  }
  // The leader exited but may have left members behind (tools, MCP servers). The kernel does not
  // hand out a number that is still some group's id, so members of this pgid that started no
  // earlier than the leader belong to the group we recorded.
  if (record.start_ticks === null) return { kind: "gone", reason: "leader is gone" };
  const members = groupMembers(record.pgid).filter((m) => m.startTicks >= record.start_ticks!);
  if (members.length === 0) return { kind: "gone", reason: "the group is already gone" };
  return { kind: "kill", members: members.map((m) => m.pid) };
}

/**
 * The leader's argv names the recorded executable: first for a binary, after the interpreter
 * (and its flags) for a script run through a `#!` line such as `#!/usr/bin/env node`.
 */
export function runsCommand(argv: readonly string[], record: Pick<GroupRecord, "command" | "argv0">): boolean {
  return argv.slice(0, 4).some((arg) => arg === record.command || arg === record.argv0);
}

function readRecord(file: string): GroupRecord | undefined {
  try {
    const parsed = groupRecordSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function killGroup(pgid: number, graceMs: number): Promise<"SIGTERM" | "SIGKILL"> {
  signalGroup(pgid, "SIGTERM");
  if (await waitUntilEmpty(pgid, graceMs)) return "SIGTERM";
  signalGroup(pgid, "SIGKILL");
  await waitUntilEmpty(pgid, SIGKILL_SETTLE_MS);
  return "SIGKILL";
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

async function waitUntilEmpty(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (groupMembers(pgid).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await delay(POLL_MS);
  }
}
