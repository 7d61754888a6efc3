import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { webhookSignature } from "../../../src/approvals/messages";
import { getDb } from "../../../src/db/client";
import {
  consumeApprovalDeliveries,
  consumeApprovalDeliveryDeadLetters,
  type Fetcher,
} from "../../../src/workers/queues/approval-deliveries";
import { call } from "../../factories";
import { eventsOf, manager, setConfig } from "../../factories/org";

const HOOK = "https://receiver.test/crewplane";
const clockNow = async () => new Date((await call("/v1/admin/clock")).body.now);

async function pendingApproval() {
  const made = await requestApproval(
    env,
    getDb(env.DB),
    {
      action: { kind: "topology_reroute", subject: "billing:alice", params: { to_agent: "bob" } },
      evidence: { samples: 5, reject_rate: 0.8, note: "<b>&</b>" },
      ttlSecs: 3600,
      requestedBy: "test",
    },
    await clockNow(),
  );
  await setConfig("approvals", { slack: { enabled: true, operators: {} }, webhook: { enabled: true, url: HOOK } });
  return made;
}

let deliveries = 0;
function batchOf(approvalId: string, channel: "slack" | "webhook", attempts = 1, queue = "crewplane-approval-deliveries") {
  const delivery_id = `dlv_${(++deliveries).toString(16).padStart(16, "0")}`;
  return createMessageBatch(queue, [
    { id: `m-${channel}-${attempts}`, timestamp: new Date(), attempts, body: { delivery_id, approval_id: approvalId, channel } },
  ]);
}

/** A fake endpoint at the boundary: records each call and answers with the given status. */
function endpoint(status: number) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetcher: Fetcher = async (url, init) => {
    calls.push({ url, init });
    return new Response("ok", { status });
  };
  return { calls, fetcher };
}

async function consume(approvalId: string, channel: "slack" | "webhook", fetcher: Fetcher, attempts = 1) {
  const batch = batchOf(approvalId, channel, attempts);
  await consumeApprovalDeliveries(batch, env, fetcher);
  return getQueueResult(batch, createExecutionContext());
}

describe("approval deliveries", () => {
  // Requests are made with the channels off (so nothing reaches the real queue), then the channels
  // are switched on and the consumer is called directly with a fake endpoint. Any other outbound
  // fetch fails the test: nothing here may reach the network.
  beforeEach(async () => {
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input) => {
      throw new Error(`unexpected network call to ${String(input instanceof Request ? input.url : input)}`);
    });
    await setConfig("approvals", {});
  });
  afterEach(() => vi.restoreAllMocks());
  const channelsOn = () => setConfig("approvals", { slack: { enabled: true, operators: {} }, webhook: { enabled: true, url: HOOK } });

  it("posts a Block Kit message with Approve / Deny buttons to the Slack incoming webhook", async () => {
    await manager("slacker");
    const { approval_id } = await pendingApproval();
    const hook = endpoint(200);
    const result = await consume(approval_id, "slack", hook.fetcher);
    expect(result.explicitAcks).toEqual(["m-slack-1"]);
    expect(hook.calls).toHaveLength(1);
    expect(hook.calls[0]!.url).toBe(env.SLACK_WEBHOOK_URL);
    const message = JSON.parse(String(hook.calls[0]!.init.body));
    const actions = message.blocks.find((b: { type: string }) => b.type === "actions");
    expect(actions.elements.map((e: { action_id: string; value: string }) => [e.action_id, e.value])).toEqual([
      ["crewplane_approve", approval_id],
      ["crewplane_deny", approval_id],
    ]);
    expect(JSON.stringify(message)).toContain("&lt;b&gt;&amp;&lt;/b&gt;");
    const delivered = (await eventsOf("approval.delivered")).filter((e) => e.subject === approval_id);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.payload).toMatchObject({ channel: "slack", http_status: 200 });
    expect(JSON.stringify(delivered[0]!.payload)).not.toContain("hooks.slack.test");
  });

  it("signs the generic webhook so a receiver can verify sender and freshness", async () => {
    await manager("hooked");
    const { approval_id } = await pendingApproval();
    const hook = endpoint(204);
    await consume(approval_id, "webhook", hook.fetcher);
    const { url, init } = hook.calls[0]!;
    expect(url).toBe(HOOK);
    const headers = new Headers(init.headers);
    const body = String(init.body);
    const ts = Number(headers.get("x-crewplane-timestamp"));
    expect(headers.get("x-crewplane-signature")).toBe(await webhookSignature(env.APPROVAL_WEBHOOK_SECRET!, ts, body));
    expect(JSON.parse(body)).toMatchObject({ type: "approval.requested", approval: { approval_id, status: "pending" } });
    expect(body).not.toContain(env.APPROVAL_WEBHOOK_SECRET!);
  });

  it("retries a failed delivery with backoff, records each failure, and never decides the approval", async () => {
    await manager("retry");
    const { approval_id } = await pendingApproval();
    const down = endpoint(503);
    const first = await consume(approval_id, "slack", down.fetcher, 1);
    expect(first.retryMessages).toEqual([expect.objectContaining({ msgId: "m-slack-1" })]);
    const thrown: Fetcher = async () => {
      throw new TypeError("network down");
    };
    const second = await consume(approval_id, "slack", thrown, 2);
    expect(second.retryMessages).toHaveLength(1);
    const failures = (await eventsOf("approval.delivery_failed")).filter((e) => e.subject === approval_id);
    expect(failures.map((e) => e.payload)).toEqual([
      expect.objectContaining({ attempt: 1, final: false, http_status: 503 }),
      expect.objectContaining({ attempt: 2, final: false, error: "TypeError" }),
    ]);
    expect((await call(`/v1/approvals/${approval_id}`)).body.status).toBe("pending");
  });

  it("gives up at once on a 4xx refusal, and records a dead letter as final; the approval stays pending", async () => {
    await manager("gone-hook");
    const { approval_id } = await pendingApproval();
    const refused = await consume(approval_id, "webhook", endpoint(404).fetcher);
    expect(refused.explicitAcks).toHaveLength(1);
    const dlq = batchOf(approval_id, "slack", 6, "crewplane-approval-deliveries-dlq");
    await consumeApprovalDeliveryDeadLetters(dlq, env);
    const failures = (await eventsOf("approval.delivery_failed")).filter((e) => e.subject === approval_id).map((e) => e.payload);
    expect(failures).toEqual([
      expect.objectContaining({ channel: "webhook", final: true, reason: "rejected", http_status: 404 }),
      expect.objectContaining({ channel: "slack", final: true, reason: "retries_exhausted" }),
    ]);
    expect((await call(`/v1/approvals/${approval_id}`)).body.status).toBe("pending");
  });

  it("does not send a request that was decided before its delivery ran", async () => {
    const mgr = await manager("quick");
    const { approval_id } = await pendingApproval();
    await call(`/v1/approvals/${approval_id}/decide`, { token: mgr.token, body: { decision: "deny" } });
    const hook = endpoint(200);
    await consume(approval_id, "slack", hook.fetcher);
    expect(hook.calls).toHaveLength(0);
    expect((await eventsOf("approval.delivery_skipped")).find((e) => e.subject === approval_id)?.payload).toMatchObject({
      status: "denied",
    });
  });

  it("goes request → queue → consumer → endpoint through the Worker's own queue handler", async () => {
    await manager("through");
    await channelsOn();
    const seen: string[] = [];
    vi.mocked(globalThis.fetch).mockImplementation(async (input) => {
      seen.push(String(input instanceof Request ? input.url : input));
      return new Response("ok", { status: 200 });
    });
    const { approval_id, status } = await requestApproval(
      env,
      getDb(env.DB),
      { action: { kind: "k", subject: "s", params: {} }, evidence: {}, ttlSecs: 3600, requestedBy: "test" },
      await clockNow(),
    );
    expect(status).toBe("pending");
    expect((await call(`/v1/approvals/${approval_id}`)).body.channels.sort()).toEqual(["slack", "webhook"]);
    const deadline = Date.now() + 20_000;
    let delivered: unknown[] = [];
    while (delivered.length < 2 && Date.now() < deadline) {
      delivered = (await eventsOf("approval.delivered")).filter((e) => e.subject === approval_id);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(delivered).toHaveLength(2);
    expect(seen.sort()).toEqual([HOOK, env.SLACK_WEBHOOK_URL].sort());
  });
});
