import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** A zombie (exited, not yet reaped by its new parent) counts as dead: it runs nothing. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    if (state === "Z" || state === "X") return false;
  } catch {
    // No /proc (not Linux) or already gone.
  }
  return true;
}

/** Polls until `check` is truthy; throws with `what` if it never becomes so. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export interface FakePids {
  pid: number;
  grandchild_pid: number;
}

/** Pids the fake CLI's `hang` scenario writes into its cwd. */
export function readFakePids(workDir: string, cli = "claude"): FakePids | undefined {
  const file = join(workDir, `fake-${cli}.pids.json`);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as FakePids) : undefined;
}

export async function expectAllDead(pids: FakePids): Promise<void> {
  // Death after SIGKILL is asynchronous; wait for it rather than asserting at one instant.
  await waitFor(
    () => !isAlive(pids.pid) && !isAlive(pids.grandchild_pid),
    `fake pids ${pids.pid}/${pids.grandchild_pid} to be gone`,
    10_000,
  );
}
