import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRunner, startWorker, type RunnerProcess } from "./stack";

describe("a utility job through the whole stack", () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;
  let runner: RunnerProcess;

  beforeAll(async () => {
    stack = await startWorker();
    const created = await stack.api("/v1/admin/runners", { body: { name: "e2e" } });
    expect(created.status).toBe(201);
    runner = startRunner(stack.base, created.body.token);
  });

  afterAll(async () => {
    await runner?.stop();
    await stack?.close();
  });

  it("answers health over plain HTTP", async () => {
    const res = await fetch(`${stack.base}/v1/health`);
    expect(await res.json()).toMatchObject({ ok: true, db: "ok" });
  });

  it("runs a claude job on the real runner with the fake claude and reports its text", async () => {
    const submitted = await stack.api("/v1/admin/jobs", {
      body: { kind: "utility", runtime: "claude", prompt: "e2e hello from crewplane", timeout_ms: 60_000 },
    });
    expect(submitted.status).toBe(202);
    const job = await stack.waitForJob(submitted.body.job_id);
    expect(job).toMatchObject({
      status: "completed",
      attempt: 1,
      result: { runtime: "claude", text: "FAKE_OK: e2e hello from crewplane" },
    });
    expect(job.result.usage).toMatchObject({ input_tokens: 10, output_tokens: 5 });
    const trail = await stack.api(`/v1/events?type=job.&subject=${submitted.body.job_id}`);
    expect(trail.body.events.map((e: { type: string }) => e.type)).toEqual(["job.queued", "job.leased", "job.completed"]);
  });

  it("runs an offline job and labels it runtime=offline without inventing usage", async () => {
    const submitted = await stack.api("/v1/admin/jobs", { body: { kind: "utility", runtime: "offline", prompt: "summarise the week" } });
    const job = await stack.waitForJob(submitted.body.job_id);
    expect(job.status).toBe("completed");
    expect(job.result.runtime).toBe("offline");
    expect(job.result.text).toContain("summarise the week");
    expect(job.result).not.toHaveProperty("usage");
  });

  it("reports a logged-out claude as a failed job with not_logged_in, not as a completion", async () => {
    const submitted = await stack.api("/v1/admin/jobs", {
      body: { kind: "utility", runtime: "claude", prompt: "[[fake:fail]] please", timeout_ms: 60_000 },
    });
    const job = await stack.waitForJob(submitted.body.job_id);
    expect(job).toMatchObject({ status: "failed", error: { code: "not_logged_in" } });
  });

  it("stops the runner cleanly on SIGTERM", async () => {
    const code = await runner.stop();
    expect(code).toBe(0);
    expect(runner.output()).toContain("runner.stopped");
  });
});

describe("a runner stopped in the middle of a job", () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;

  beforeAll(async () => {
    stack = await startWorker();
  });

  afterAll(async () => {
    await stack?.close();
  });

  it("hands the job back on SIGTERM and another runner finishes it on attempt 2", async () => {
    const tokenA = (await stack.api("/v1/admin/runners", { body: { name: "a" } })).body.token;
    const tokenB = (await stack.api("/v1/admin/runners", { body: { name: "b" } })).body.token;
    // runner A's claude is slow enough to be caught mid-job
    const a = startRunner(stack.base, tokenA, { FAKE_SCENARIO: "slow", FAKE_DELAY_MS: "20000" });
    const submitted = await stack.api("/v1/admin/jobs", {
      body: { kind: "utility", runtime: "claude", prompt: "survive a restart", timeout_ms: 60_000 },
    });
    const jobId = submitted.body.job_id;
    const deadline = Date.now() + 60_000;
    while ((await stack.api(`/v1/admin/jobs/${jobId}`)).body.status !== "leased") {
      if (Date.now() > deadline) throw new Error("runner A never leased the job");
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(await a.stop()).toBe(0);
    // The events feed is written through the inbox's outbox, just after the change: wait for it.
    let handedBack = await stack.api(`/v1/events?type=job.requeued&subject=${jobId}`);
    for (const until = Date.now() + 15_000; handedBack.body.events.length === 0 && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 200));
      handedBack = await stack.api(`/v1/events?type=job.requeued&subject=${jobId}`);
    }
    expect(handedBack.body.events).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({ reason: "retryable_failure", error: expect.objectContaining({ code: "runner_shutdown" }) }),
      }),
    ]);

    const b = startRunner(stack.base, tokenB);
    try {
      const job = await stack.waitForJob(jobId);
      expect(job).toMatchObject({ status: "completed", attempt: 2, result: { text: "FAKE_OK: survive a restart" } });
    } finally {
      await b.stop();
    }
  });
});
