import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "./stack";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe("npm start", () => {
  const scratch = mkdtempSync(join(tmpdir(), "crewplane-start-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("brings up the Worker and the runner, runs a job, and stops everything on Ctrl-C", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // the same script `npm start` runs, with a throwaway state dir and runner home; the admin token
    // is whatever it prints (from .dev.vars, generated on a fresh clone)
    const child = spawn(process.execPath, [join(ROOT, "scripts/start.mjs")], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        CREWPLANE_STATE_DIR: join(scratch, "state"),
        CREWPLANE_HOME: join(scratch, "home"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      const deadline = Date.now() + 150_000;
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
      const { job_id } = (await submitted.json()) as { job_id: string };
      let job: { status: string; result?: { runtime: string } } = { status: "queued" };
      while (!["completed", "failed", "dead"].includes(job.status)) {
        if (Date.now() > deadline) throw new Error(`job still ${job.status}:\n${out}`);
        await new Promise((r) => setTimeout(r, 250));
        job = (await (await fetch(`${base}/v1/admin/jobs/${job_id}`, { headers: auth })).json()) as typeof job;
      }
      expect(job).toMatchObject({ status: "completed", result: { runtime: "offline" } });
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
    expect(out).toContain("runner.stopped");
    await expect(fetch(`${base}/v1/health`)).rejects.toThrow();
  });
});
