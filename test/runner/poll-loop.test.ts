/**
 * The poll loop in-process against a fake Worker: what the server receives is what a user of the
 * control plane would see.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createApiClient } from "../../local-runner/src/api-client.ts";
import { UnauthorizedError } from "../../local-runner/src/errors.ts";
import { createMemoryLogger } from "../../local-runner/src/logger.ts";
import { createPollLoop } from "../../local-runner/src/poll-loop.ts";
import { respond } from "../../local-runner/src/runtimes/offline.ts";
import { runtimeTable } from "../../local-runner/src/runtimes/index.ts";
import { workDirFor } from "../../local-runner/src/work-dir.ts";
import { startFakeServer } from "./helpers/fake-server.ts";
import { fakeClaude, tempDir } from "./helpers/paths.ts";
import { expectAllDead, readFakePids, waitFor } from "./helpers/processes.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of teardown.splice(0).reverse()) await fn();
});

async function setup(options: { token?: string; env?: Record<string, string>; concurrency?: number } = {}) {
  const server = await startFakeServer();
  teardown.push(() => server.close());
  const { dir: home, cleanup } = tempDir();
  teardown.push(cleanup);
  const logger = createMemoryLogger();
  const loop = createPollLoop({
    client: createApiClient({ baseUrl: server.url, token: options.token ?? server.token }),
    runtimes: runtimeTable({ claude: fakeClaude }),
    home,
    concurrency: options.concurrency ?? 2,
    logger,
    waitMs: 500,
    env: { ...process.env, ...options.env },
    backoff: { initialMs: 50, maxMs: 200 },
    report: { attempts: 4, initialMs: 50 },
  });
  const running = loop.run();
  teardown.push(() => loop.shutdown("test over"));
  const logged = (event: string, jobId?: string) =>
    logger.records.find((r) => r.event === event && (jobId === undefined || r.job_id === jobId));
  return { server, home, loop, running, logger, logged };
}

describe("poll loop", () => {
  it("leases an offline utility job and completes it with the right body", async () => {
    const { server } = await setup();
    const job = server.enqueue({ payload: { runtime: "offline", prompt: "Daily digest\nitems…", timeout_ms: 5000 } });
    const complete = await server.waitForRequest("complete", job.job_id);

    const lease = server.requestsTo("lease")[0]!;
    expect(lease.authorization).toBe(`Bearer ${server.token}`);
    expect(lease.body).toEqual({ capacity: 2, wait_ms: 500, runtimes: ["offline", "claude"], poll_id: expect.any(String) });

    expect(complete.authorization).toBe(`Bearer ${server.token}`);
    expect(complete.body).toEqual({
      lease_id: job.lease_id(),
      result: { text: respond("Daily digest\nitems…").text, runtime: "offline", model: "offline", duration_ms: expect.any(Number) },
    });
    expect(server.requestsTo("fail")).toHaveLength(0);
  });

  it("extends the lease of a job that runs longer than a third of it", async () => {
    const { server } = await setup({ env: { FAKE_DELAY_MS: "600" } });
    const job = server.enqueue({
      payload: { runtime: "claude", prompt: "[[fake:slow]] take your time", timeout_ms: 20_000 },
      leaseMs: 1500,
    });
    const complete = await server.waitForRequest("complete", job.job_id);
    expect(complete.body.result.text).toBe("FAKE_OK: [[fake:slow]] take your time");

    const extends_ = server.requestsTo("extend", job.job_id);
    expect(extends_.length).toBeGreaterThanOrEqual(1);
    expect(extends_[0]!.body.lease_id).toBe(job.lease_id());
    // extend_ms is the lease length seen at lease time (≈1500 ms, less the request's own latency).
    expect(extends_[0]!.body.extend_ms).toBeGreaterThan(500);
    expect(extends_[0]!.body.extend_ms).toBeLessThanOrEqual(1500);
  });

  it("kills a job whose extend gets 409 and never reports it", async () => {
    const { server, home, logged } = await setup();
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:hang]]", timeout_ms: 60_000 }, leaseMs: 1500 });
    // The lease goes stale only once the CLI is up, so a slow start cannot hide what is tested.
    server.override = (req) =>
      req.path.endsWith("/extend") && readFakePids(workDirFor(home, job.job_id))
        ? { status: 409, body: { type: "about:blank", title: "Conflict", status: 409, code: "conflict", detail: "stale lease" } }
        : undefined;

    const pids = await waitFor(() => readFakePids(workDirFor(home, job.job_id)), "the fake claude to start");
    await waitFor(() => logged("job.dropped", job.job_id), "the runner to drop the job");
    await expectAllDead(pids);
    expect(server.requestsTo("complete", job.job_id)).toHaveLength(0);
    expect(server.requestsTo("fail", job.job_id)).toHaveLength(0);
  });

  it("fails jobs of an unknown kind as unsupported_job", async () => {
    const { server } = await setup();
    const job = server.enqueue({ kind: "conversation", payload: {} });
    const fail = await server.waitForRequest("fail", job.job_id);
    expect(fail.body).toEqual({
      lease_id: job.lease_id(),
      error: { code: "unsupported_job", message: expect.stringContaining("conversation") },
      retryable: false,
    });
  });

  it("reports a not-logged-in claude as a non-retryable failure", async () => {
    const { server } = await setup();
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:fail]]", timeout_ms: 20_000 } });
    const fail = await server.waitForRequest("fail", job.job_id);
    expect(fail.body).toMatchObject({ lease_id: job.lease_id(), error: { code: "not_logged_in" }, retryable: false });
  });

  it("keeps polling through server errors and retries a failed completion", async () => {
    const { server, logged } = await setup();
    let leaseErrors = 2;
    let completeErrors = 1;
    server.override = (req) => {
      if (req.path === "/v1/runner/lease" && leaseErrors-- > 0) return { status: 503, body: { code: "unavailable", status: 503 } };
      if (req.path.endsWith("/complete") && completeErrors-- > 0) return { status: 502 };
      return undefined;
    };
    const job = server.enqueue({ payload: { runtime: "offline", prompt: "again", timeout_ms: 5000 } });
    await waitFor(() => logged("job.reported", job.job_id), "the completion to be delivered");
    expect(server.requestsTo("complete", job.job_id)).toHaveLength(2);
    expect(logged("lease.failed")).toBeDefined();
    expect(logged("job.report_retry", job.job_id)).toBeDefined();
  });

  it("never runs more jobs than its concurrency", async () => {
    const { server } = await setup({ concurrency: 1, env: { FAKE_DELAY_MS: "200" } });
    const first = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:slow]] first", timeout_ms: 20_000 } });
    const second = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:slow]] second", timeout_ms: 20_000 } });
    await server.waitForRequest("complete", second.job_id);

    const leases = server.requestsTo("lease");
    expect(leases.every((r) => r.body.capacity === 1)).toBe(true);
    // With its only slot busy the runner does not ask for more work until the first job is reported.
    const firstDone = server.requests.indexOf(server.requestsTo("complete", first.job_id)[0]!);
    const leasesBeforeFirstDone = leases.filter((r) => server.requests.indexOf(r) < firstDone);
    expect(leasesBeforeFirstDone).toHaveLength(1);
  });

  it("stops with UnauthorizedError when the token is rejected", async () => {
    const { running } = await setup({ token: "wrong-token" });
    await expect(running).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("on shutdown kills running jobs and fails them as runner_shutdown", async () => {
    const { server, home, loop, running } = await setup();
    const job = server.enqueue({ payload: { runtime: "claude", prompt: "[[fake:hang]]", timeout_ms: 60_000 } });
    const pids = await waitFor(() => readFakePids(workDirFor(home, job.job_id)), "the fake claude to start");
    await loop.shutdown("SIGTERM");
    await running;
    const fail = server.requestsTo("fail", job.job_id)[0];
    expect(fail?.body).toEqual({
      lease_id: job.lease_id(),
      error: { code: "runner_shutdown", message: expect.stringContaining("SIGTERM") },
      retryable: true,
    });
    await expectAllDead(pids);
  });
});
