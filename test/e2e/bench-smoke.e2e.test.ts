import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ROOT } from "./stack";

/** Runs `npm run bench -- --smoke` (every registered benchmark, 2 s per measurement, nothing written). */
function runSmoke(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bench/run.mjs", "--smoke"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.once("exit", (code) => resolve({ code, output }));
  });
}

describe("benchmarks (smoke mode)", () => {
  it("runs every registered benchmark against the baseline Worker and passes its end-of-run checks", { timeout: 600_000 }, async () => {
    const { code, output } = await runSmoke();
    // On failure, name the failed checks first: the tail of the output may belong to a later benchmark.
    const failedChecks = output.split("\n").filter((line) => line.startsWith("FAIL "));
    if (code !== 0) console.error(`${failedChecks.join("\n")}\n---\n${output.slice(-8_000)}`);
    expect(failedChecks).toEqual([]);
    expect(code).toBe(0);
    for (const name of ["runner-protocol", "inbox-growth", "inbox-ceiling", "topology-tick"])
      expect(output).toContain(`## ${name} (smoke)`);
    expect(output).toMatch(/^ok {3}no job handed out twice/m);
  });
});
