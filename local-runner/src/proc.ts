/**
 * Reading Linux /proc: enough to tell whether a pid still is the process we started (its argv and
 * its start time, which a recycled pid cannot share) and which processes are in a process group.
 * Every reader returns undefined where /proc is missing or the process is gone, never a guess.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcStat {
  pid: number;
  /** R, S, D, Z (zombie), X (dead), … */
  state: string;
  ppid: number;
  pgid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot when the process started. */
  startTicks: number;
}

/**
 * Parses one /proc/<pid>/stat line. The command name (field 2) is in parentheses and may itself
 * contain ") " or spaces, so the fixed fields are read after the LAST ")".
 */
export function parseStat(text: string): ProcStat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const rest = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state), so field N is rest[N - 3].
  const state = rest[0];
  const ppid = Number(rest[1]);
  const pgid = Number(rest[2]);
  const startTicks = Number(rest[19]);
  if (!state || ![pid, ppid, pgid, startTicks].every(Number.isInteger)) return undefined;
  return { pid, state, ppid, pgid, startTicks };
}

export function readStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

/** argv as the kernel holds it (NUL-separated). A zombie's is empty, which reads as undefined. */
export function readCmdline(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (raw.length === 0) return undefined;
    return raw.replace(/\0$/, "").split("\0");
  } catch {
    return undefined;
  }
}

/** Changes on every boot; start ticks are only comparable within one boot. */
export function readBootId(): string | undefined {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

export function procAvailable(): boolean {
  return readStat(process.pid) !== undefined;
}

/** A zombie or dead entry runs nothing; it only waits for its parent to reap it. */
export function isRunning(stat: ProcStat | undefined): stat is ProcStat {
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X";
}

/** Live (non-zombie) processes whose process group is `pgid`. */
export function groupMembers(pgid: number): ProcStat[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const members: ProcStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (isRunning(stat) && stat.pgid === pgid) members.push(stat);
  }
  return members;
}
