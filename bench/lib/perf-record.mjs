// Opt-in native profiles of each side's workerd over a compared row (BENCH_PERF_DIR=/some/dir), with
// Linux `perf` sampling on the cpu-clock software event. The V8 profile of the Worker's isolate sees only
// the Worker's JavaScript; local D1 runs in another isolate of the same process, and SQLite, the runtime's
// I/O and garbage collection are native: this sees the whole process, as the CPU column counts it.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

let recorded = 0;

/**
 * Starts `perf record` (or `perf stat`, with BENCH_PERF_EVENTS) on the given pids (side → pid) when
 * BENCH_PERF_DIR is set; returns a stop function that waits for every recording to be written. A
 * missing `perf` or pid records nothing.
 */
export function startPerf(label, pids) {
  const dir = process.env.BENCH_PERF_DIR;
  if (!dir) return async () => [];
  mkdirSync(dir, { recursive: true });
  // Numbered in the order rows are measured: several rows of one benchmark share a baseline route.
  const slug = `${String(++recorded).padStart(2, "0")}-${label.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`;
  // BENCH_PERF_EVENTS=a,b counts those events (uprobes added with `perf probe`, say) instead of sampling.
  const events = process.env.BENCH_PERF_EVENTS;
  const args = events ? ["stat", "-x", ",", "-e", events] : ["record", "-e", "cpu-clock", "-F", "997", "-g"];
  const runs = Object.entries(pids)
    .filter(([, pid]) => pid !== null)
    .map(([side, pid]) => {
      const file = join(dir, `${slug}-${side}.${events ? "stat" : "data"}`);
      const child = spawn("perf", [...args, "-p", String(pid), "-o", file], { stdio: "ignore" });
      const done = new Promise((resolve) => {
        child.on("error", () => resolve(null));
        child.on("exit", () => resolve(file));
      });
      return { child, done };
    });
  return async () => {
    for (const { child } of runs) child.kill("SIGINT");
    return Promise.all(runs.map((r) => r.done));
  };
}
