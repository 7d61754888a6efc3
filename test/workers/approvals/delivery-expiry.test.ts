import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { getDb } from "../../../src/db/client";
import { consumeApprovalDeliveries, type Fetcher } from "../../../src/workers/queues/approval-deliveries";
import { call } from "../../factories";
import { advanceClock, eventsOf, manager, setConfig } from "../../factories/org";

const clockNow = async () => new Date((await call("/v1/admin/clock")).body.now);

describe("a delivery that runs after its approval's TTL", () => {
  beforeEach(() => {
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input) => {
      throw new Error(`unexpected network call to ${String(input instanceof Request ? input.url : input)}`);
    });
  });
  afterEach(() => vi.restoreAllMocks());

  it("sends nothing (a person would get buttons that can only answer 409) and records the expiry", async () => {
    await manager("late-hook");
    await setConfig("approvals", {});
    const { approval_id } = await requestApproval(
      env,
      getDb(env.DB),
      { action: { kind: "k", subject: "late", params: {} }, evidence: {}, ttlSecs: 60, requestedBy: "test" },
      await clockNow(),
    );
    await setConfig("approvals", { slack: { enabled: true, operators: {} } });
    // A retried delivery's backoff outlived the TTL; nothing has swept the approval yet.
    await advanceClock(75_000);
    const calls: string[] = [];
    const fetcher: Fetcher = async (url) => {
      calls.push(url);
      return new Response("ok", { status: 200 });
    };
    const batch = createMessageBatch("crewplane-approval-deliveries", [
      { id: "m-late", timestamp: new Date(), attempts: 4, body: { delivery_id: "dlv_00000000000000ff", approval_id, channel: "slack" } },
    ]);
    await consumeApprovalDeliveries(batch, env, fetcher);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks).toEqual(["m-late"]);
    expect(calls).toEqual([]);
    expect((await eventsOf("approval.delivered")).filter((e) => e.subject === approval_id)).toHaveLength(0);
    expect((await eventsOf("approval.delivery_skipped")).find((e) => e.subject === approval_id)?.payload).toMatchObject({
      reason: "no_longer_pending",
      status: "expired",
    });
    expect((await eventsOf("approval.expired")).filter((e) => e.subject === approval_id)).toHaveLength(1);
    await setConfig("approvals", {});
  });
});
