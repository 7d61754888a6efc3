import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inboxJob } from "../../factories/inbox-pools";
import worker from "../../../src/workers/index";
import { dispatchOf } from "../../factories/inbox";

describe("dispatch consumer", () => {
  it("puts a batch's valid jobs into the inbox in one go, acknowledges a malformed one, and ignores a redelivery", async () => {
    const a = dispatchOf();
    const b = dispatchOf({ payload: { runtime: "claude", prompt: "x", timeout_ms: 60_000 } });
    const messages = [
      { id: "m-a", timestamp: new Date(), attempts: 1, body: a },
      { id: "m-bad", timestamp: new Date(), attempts: 1, body: { job_id: "nope" } },
      { id: "m-b", timestamp: new Date(), attempts: 1, body: b },
    ];
    const batch = createMessageBatch("crewplane-dispatch", messages);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks.sort()).toEqual(["m-a", "m-b", "m-bad"]);
    expect(await inboxJob(env, a.job_id)).toMatchObject({ status: "queued", attempt: 0 });
    expect(await inboxJob(env, b.job_id)).toMatchObject({ status: "queued", attempt: 0 });

    const again = createMessageBatch("crewplane-dispatch", [messages[0]!]);
    await worker.queue(again, env);
    expect((await getQueueResult(again, createExecutionContext())).explicitAcks).toEqual(["m-a"]);
    expect(await inboxJob(env, a.job_id)).toMatchObject({ status: "queued", attempt: 0 });
  });
});
