import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { alive, descendants, freePort, processesMentioning } from "./npm-start";
import { ROOT } from "./stack";

describe("npm start", () => {
  const scratch = mkdtempSync(join(tmpdir(), "crewplane-start-"));
  let child: ChildProcess | undefined;
  let exited: Promise<number | null> = Promise.resolve(null);

  afterAll(async () => {
    // Also runs when the test timed out: never leave a stack running behind the suite.
    if (child && child.exitCode === null) {
      child.kill("SIGINT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    }
    for (const pid of processesMentioning(scratch)) process.kill(pid, "SIGKILL");
    rmSync(scratch, { recursive: true, force: true });
  });

  it("brings up the Worker and the runner, runs a job, and stops everything on Ctrl-C", { timeout: 240_000 }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // The script `npm start` runs, with a throwaway state dir and runner home; the admin token is
    // whatever it prints (from .dev.vars, generated on a fresh clone).
    child = spawn(process.execPath, [join(ROOT, "scripts/start.mjs")], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), CREWPLANE_STATE_DIR: join(scratch, "state"), CREWPLANE_HOME: join(scratch, "home") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const started = child;
    exited = new Promise((r) => started.once("exit", (code) => r(code)));
    let out = "";
    started.stdout!.on("data", (d) => (out += d));
    started.stderr!.on("data", (d) => (out += d));

    const deadline = Date.now() + 180_000;
    while (!out.includes("crewplane is running") && !out.includes("start failed")) {
      if (Date.now() > deadline) throw new Error(`npm start did not come up:\n${out}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(out).toContain(`crewplane is running at ${base}`);
    const admin = /admin token \([^)]*\): (\S+)/.exec(out)?.[1];
    expect(admin).toBeTruthy();

    const health = await fetch(`${base}/v1/health`);
    expect(await health.json()).toMatchObject({ ok: true, db: "ok" });

    const auth = { authorization: `Bearer ${admin}`, "content-type": "application/json" };
    const submitted = await fetch(`${base}/v1/admin/jobs`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ kind: "utility", runtime: "offline", prompt: "hello from npm start" }),
    });
    expect(submitted.status).toBe(202);
    const { job_id } = (await submitted.json()) as { job_id: string };
    let job: { status: string; result?: { runtime: string } } = { status: "queued" };
    while (!["completed", "failed", "dead"].includes(job.status)) {
      if (Date.now() > deadline) throw new Error(`job still ${job.status}:\n${out}`);
      await new Promise((r) => setTimeout(r, 250));
      job = (await (await fetch(`${base}/v1/admin/jobs/${job_id}`, { headers: auth })).json()) as typeof job;
    }
    expect(job).toMatchObject({ status: "completed", result: { runtime: "offline" } });
    // The state holds the data, not wrangler's per-request trace store, which grows without bound.
    expect(existsSync(join(scratch, "state/v3/d1"))).toBe(true);
    expect(existsSync(join(scratch, "state/v3/observability"))).toBe(false);

    const tree = descendants(started.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(3);
    started.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(out).toContain("runner.stopped");
    await expect(fetch(`${base}/v1/health`)).rejects.toThrow();
    // workerd may take a moment after its parent to exit; it must not outlive the stop for long
    const stopDeadline = Date.now() + 10_000;
    while (tree.some(alive) && Date.now() < stopDeadline) await new Promise((r) => setTimeout(r, 200));
    expect(tree.filter(alive)).toEqual([]);
  });
});
