import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../../src/workers/index";
import { call, createRunner } from "../../factories";
import { leaseJob, submitDelivered } from "../../factories/runner-protocol";

async function deadLetter(message: unknown, id: string) {
  const batch = createMessageBatch("crewplane-dispatch-dlq", [{ id, timestamp: new Date(), attempts: 6, body: message }]);
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  return getQueueResult(batch, ctx);
}

describe("dispatch dead letters", () => {
  it("leave a job the runner inbox already holds alone: it is not marked dead, and it runs and completes as usual", async () => {
    // The inbox took the job in, but the consumer never saw its call succeed (a lost reply, a
    // failing alarm write): the message ends in the dead-letter queue although nothing was lost.
    const jobId = await submitDelivered({ prompt: "held already" });
    const message = {
      job_id: jobId,
      kind: "utility",
      payload: { runtime: "offline", prompt: "held already", timeout_ms: 600_000 },
      owner: { kind: "admin", id: "bootstrap-admin" },
      enqueued_at: new Date().toISOString(),
    };
    expect((await deadLetter(message, "m-held")).explicitAcks).toEqual(["m-held"]);
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "queued" });
    expect((await call(`/v1/events?type=job.dead&subject=${jobId}`)).body.events).toEqual([]);

    const runner = await createRunner("dlq-runner");
    const job = await leaseJob(runner.token, jobId);
    const done = await call(`/v1/runner/jobs/${jobId}/complete`, {
      token: runner.token,
      body: { lease_id: job.lease_id, result: { text: "ok" } },
    });
    expect(done.status).toBe(200);
    const view = (await call(`/v1/admin/jobs/${jobId}`)).body;
    expect(view).toMatchObject({ status: "completed", result: { text: "ok" } });
    expect(view.error).toBeUndefined();
  });
});
