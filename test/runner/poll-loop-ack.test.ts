/**
 * What the poll loop does between a claim and a report: it acknowledges the claim before running
 * anything, answers a refused result with a non-retryable fail, and cleans up or keeps work dirs.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UnauthorizedError } from "../../local-runner/src/errors.ts";
import { ENDED_MARKER, workDirFor } from "../../local-runner/src/work-dir.ts";
import { startLoop } from "./helpers/loop.ts";
import { tempDir } from "./helpers/paths.ts";
import { waitFor } from "./helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of teardown.splice(0).reverse()) await fn();
});

const problem = (status: number, code: string, detail: string) => ({
  status,
  body: { type: "about:blank", title: code, status, code, detail },
});
const claudeJob = (prompt = "hello") => ({ payload: { runtime: "claude", prompt, timeout_ms: 20_000 } });

/** FAKE_ARGV_LOG: the fake claude appends a line per start, so "never started" is checkable. */
function argvLog() {
  const { dir, cleanup } = tempDir("crewplane-argv-");
  teardown.push(cleanup);
  const file = join(dir, "argv.jsonl");
  return { file, starts: () => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").length : 0) };
}

describe("ack before running", () => {
  it("acknowledges a claimed job with its lease id before it runs, then completes it", async () => {
    const { server } = await startLoop(teardown);
    const job = server.enqueue(claudeJob());
    await server.waitForRequest("complete", job.job_id);
    const ack = server.requestsTo("ack", job.job_id);
    expect(ack.map((r) => r.body)).toEqual([{ lease_id: job.lease_id() }]);
    expect(server.requests.indexOf(ack[0]!)).toBeLessThan(server.requests.indexOf(server.requestsTo("complete", job.job_id)[0]!));
  });

  it("drops a job whose ack answers 409 (claim already returned to the queue) without running or reporting it", async () => {
    const log = argvLog();
    const { server, home, logged } = await startLoop(teardown, {
      env: { FAKE_ARGV_LOG: log.file },
      configure: (s) => (s.override = (req) => (req.path.endsWith("/ack") ? problem(409, "stale_lease", "lease not current") : undefined)),
    });
    const job = server.enqueue(claudeJob());
    const dropped = await waitFor(() => logged("job.dropped", job.job_id), "the runner to drop the job");
    expect(String(dropped.reason)).toContain("already returned to the queue");

    // Still polling: a later job is leased (and dropped the same way), proving the loop went on.
    const next = server.enqueue(claudeJob("second"));
    await waitFor(() => logged("job.dropped", next.job_id), "the second job to be seen");
    expect(log.starts()).toBe(0);
    expect(existsSync(workDirFor(home, job.job_id))).toBe(false);
    expect(server.requestsTo("extend", job.job_id)).toHaveLength(0);
    expect(server.requestsTo("complete", job.job_id)).toHaveLength(0);
    expect(server.requestsTo("fail", job.job_id)).toHaveLength(0);
  });

  it("drops a job the Worker no longer knows (404 about the job)", async () => {
    const log = argvLog();
    const { server, logged } = await startLoop(teardown, {
      env: { FAKE_ARGV_LOG: log.file },
      configure: (s) => (s.override = (req) => (req.path.endsWith("/ack") ? problem(404, "not_found", "job j not found") : undefined)),
    });
    const job = server.enqueue(claudeJob());
    expect(String((await waitFor(() => logged("job.dropped", job.job_id), "the drop")).reason)).toContain("no longer exists");
    expect(log.starts()).toBe(0);
    expect(server.requestsTo("fail", job.job_id)).toHaveLength(0);
  });

  it("runs the job on a Worker that has no ack endpoint yet (a route-missing 404)", async () => {
    const { server, logged } = await startLoop(teardown, { configure: (s) => (s.withoutAck = true) });
    const job = server.enqueue(claudeJob());
    const complete = await server.waitForRequest("complete", job.job_id);
    expect(complete.body.result.text).toBe("FAKE_OK: hello");
    expect(server.requestsTo("ack", job.job_id)).toHaveLength(1);
    expect(logged("job.ack_unsupported", job.job_id)).toBeDefined();
  });

  it("retries an ack that met a server error, then runs the job", async () => {
    let failures = 1;
    const { server } = await startLoop(teardown, {
      configure: (s) => (s.override = (req) => (req.path.endsWith("/ack") && failures-- > 0 ? { status: 503 } : undefined)),
    });
    const job = server.enqueue(claudeJob());
    await server.waitForRequest("complete", job.job_id);
    expect(server.requestsTo("ack", job.job_id)).toHaveLength(2);
  });

  it("stops the runner with UnauthorizedError when the ack is refused with 401", async () => {
    const log = argvLog();
    const { server, running } = await startLoop(teardown, {
      env: { FAKE_ARGV_LOG: log.file },
      configure: (s) => (s.override = (req) => (req.path.endsWith("/ack") ? problem(401, "unauthorized", "token revoked") : undefined)),
    });
    server.enqueue(claudeJob());
    await expect(running).rejects.toBeInstanceOf(UnauthorizedError);
    expect(log.starts()).toBe(0);
  });
});

describe("a result the Worker refuses", () => {
  it.each([
    [413, "payload_too_large", "result is 10485760 bytes; the limit is 524288 bytes (512 KiB)", "524288 bytes"],
    [422, "validation_failed", "result nests 5000 levels deep; the limit is 64", "the limit is 64"],
  ])("fails the job non-retryably as result_too_large when complete answers %i, naming the limit", async (status, code, detail, limit) => {
    const { server } = await startLoop(teardown, {
      configure: (s) => (s.override = (req) => (req.path.endsWith("/complete") ? problem(status, code, detail) : undefined)),
    });
    const job = server.enqueue(claudeJob());
    const fail = await server.waitForRequest("fail", job.job_id);
    expect(fail.body).toEqual({
      lease_id: job.lease_id(),
      error: { code: "result_too_large", message: expect.stringContaining(limit) },
      retryable: false,
    });
    // Not retried: the same result can never fit.
    expect(server.requestsTo("complete", job.job_id)).toHaveLength(1);
  });
});

describe("work dirs of finished jobs", () => {
  it("removes the dir of a job whose result the Worker took", async () => {
    const { server, home } = await startLoop(teardown);
    const job = server.enqueue(claudeJob());
    await server.waitForRequest("complete", job.job_id);
    await waitFor(() => !existsSync(workDirFor(home, job.job_id)), "the work dir to be removed");
  });

  it("keeps a failed job's dir with its end marker, then sweeps it once the Worker's keep period has passed", async () => {
    let clock = Date.now();
    const { server, home, logged } = await startLoop(teardown, {
      now: () => clock,
      sweepIntervalMs: 100,
      configure: (s) => (s.settings = { keep_failed_work_hours: 1 }),
    });
    const job = server.enqueue(claudeJob("[[fake:fail]]"));
    await server.waitForRequest("fail", job.job_id);
    const dir = workDirFor(home, job.job_id);
    await waitFor(() => existsSync(join(dir, ENDED_MARKER)), "the end marker");
    expect(JSON.parse(readFileSync(join(dir, ENDED_MARKER), "utf8"))).toMatchObject({ job_id: job.job_id, code: "not_logged_in" });
    expect(existsSync(join(dir, "stream.jsonl"))).toBe(true);
    expect(logged("work.keep_failed_hours")).toMatchObject({ keep_failed_work_hours: 1, previous: 24 });

    // Within the hour it stays (several sweeps run meanwhile)…
    clock += 59 * 60_000;
    await new Promise((r) => setTimeout(r, 400));
    expect(existsSync(dir)).toBe(true);
    // …and past it, the next sweep removes it.
    clock += 2 * 60_000;
    await waitFor(() => !existsSync(dir), "the sweep to remove the dir");
    expect(logged("work.swept")).toMatchObject({ keep_failed_work_hours: 1 });
  });
});
