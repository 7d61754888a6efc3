import { readdirSync, readFileSync } from "node:fs";
import { waitFor } from "./processes.ts";

/**
 * Live processes whose command line or environment mentions `marker` (a test's unique temp dir):
 * what a run left behind, whatever became of its parent. Zombies do not count (they run nothing).
 */
export function processesMentioning(marker: string): Array<{ pid: number; cmdline: string }> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
      if (state === "Z" || state === "X") continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      let environ = "";
      try {
        environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      } catch {
        // Not ours to read; the command line still counts.
      }
      if (cmdline.includes(marker) || environ.includes(marker)) found.push({ pid, cmdline: cmdline.trim() });
    } catch {
      // Gone between readdir and read.
    }
  }
  return found;
}

/** Waits until nothing mentioning `marker` runs any more (process death after SIGKILL is asynchronous). */
export async function expectNothingRunning(marker: string, timeoutMs = 15_000): Promise<void> {
  try {
    await waitFor(() => processesMentioning(marker).length === 0, `no process mentioning ${marker}`, timeoutMs, 100);
  } catch (err) {
    throw new Error(`${(err as Error).message}; still running: ${JSON.stringify(processesMentioning(marker))}`);
  }
}
