import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRunner, startWorker, type RunnerProcess } from "./stack";

const SLACK_SECRET = "e2e-slack-signing-secret";

/** A fake Slack incoming webhook on localhost: records every message posted to it. */
async function fakeSlack() {
  const messages: any[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      messages.push(JSON.parse(body));
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/services/T0/B0/e2e`, messages, close: () => new Promise((r) => server.close(r)) };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("approvals and topology through the whole stack", () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;
  let runner: RunnerProcess;
  let slack: Awaited<ReturnType<typeof fakeSlack>>;
  let runnerToken: string;

  beforeAll(async () => {
    slack = await fakeSlack();
    stack = await startWorker({ secrets: { SLACK_WEBHOOK_URL: slack.url, SLACK_SIGNING_SECRET: SLACK_SECRET } });
    const created = await stack.api("/v1/admin/runners", { body: { name: "e2e-d5" } });
    runnerToken = created.body.token;
    runner = startRunner(stack.base, runnerToken);
  });

  afterAll(async () => {
    await runner?.stop();
    await stack?.close();
    await slack?.close();
  });

  it("llm_select runs on the real runner; the offline runtime's answer is no pick, so the hierarchy routes and says why", async () => {
    for (const [id, reportsTo] of [
      ["lead", null],
      ["alice", "lead"],
      ["bob", "lead"],
    ] as const) {
      const res = await stack.api(`/v1/employees/${id}`, {
        method: "PUT",
        body: { name: id, runtime: "offline", model: { preferred: "offline" }, reports_to: reportsTo },
      });
      expect(res.status).toBe(200);
    }
    await stack.api("/v1/config/dispatch", {
      method: "PUT",
      body: { policy: "llm_select", rosters: { research: ["alice", "bob"] }, llm_select: { runtime: "offline", wait_ms: 20_000 } },
    });
    const res = await stack.api("/v1/tasks", {
      body: { title: "compare queues", mode: "goal", assignee: "lead", tags: ["research"], manual: true },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ assigned_to: "lead", routed_by: "hierarchy" });
    const task = (await stack.api(`/v1/tasks/${res.body.task_id}`)).body;
    expect(task.route).toMatchObject({ policy: "llm_select", fallback: "llm_select_unparseable", roster: ["alice", "bob"] });
    const job = await stack.waitForJob(task.route.job_id);
    expect(job).toMatchObject({ status: "completed", result: { runtime: "offline" } });
    await stack.api("/v1/config/dispatch", { method: "PUT", body: {} });
  });

  it("proposes a reroute, posts it to Slack, takes a signed button press as the human decision, and reroutes", async () => {
    const manager = (await stack.api("/v1/admin/operators", { body: { name: "mia", role: "manager" } })).body;
    await stack.api("/v1/config/approvals", {
      method: "PUT",
      body: { slack: { enabled: true, operators: { U0MIA: manager.operator_id } } },
    });
    await stack.api("/v1/config/topology_evolution", { method: "PUT", body: { enabled: true } });

    // The runner settles what it worked on: alice fails billing, bob does it cleanly.
    for (const [who, status] of [
      ["alice", "failed"],
      ["alice", "failed"],
      ["alice", "needs_human"],
      ["alice", "failed"],
      ["alice", "done"],
      ["bob", "done"],
      ["bob", "done"],
      ["bob", "done"],
      ["bob", "done"],
      ["bob", "done"],
    ] as const) {
      const t = await stack.api("/v1/tasks", {
        body: { title: "reconcile", mode: "goal", assignee: who, tags: ["billing"], manual: true },
      });
      expect((await stack.api(`/v1/tasks/${t.body.task_id}/settle`, { token: runnerToken, body: { status } })).status).toBe(200);
    }

    const tick = await stack.api("/v1/admin/ticks/topology", { method: "POST" });
    expect(tick.body.summary.proposal).toMatchObject({ task_class: "billing", from_agent: "alice", to_agent: "bob", status: "pending" });
    const approvalId = tick.body.summary.proposal.approval_id;

    const message = await until("the Slack message", async () => slack.messages.find((m) => JSON.stringify(m).includes(approvalId)));
    const buttons = message.blocks.find((b: { type: string }) => b.type === "actions").elements;
    expect(buttons.map((b: { action_id: string }) => b.action_id)).toEqual(["crewplane_approve", "crewplane_deny"]);

    const press = `payload=${encodeURIComponent(
      JSON.stringify({
        type: "block_actions",
        user: { id: "U0MIA" },
        actions: [{ action_id: buttons[0].action_id, value: buttons[0].value }],
      }),
    )}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const sign = (secret: string) => `v0=${createHmac("sha256", secret).update(`v0:${ts}:${press}`).digest("hex")}`;
    const post = (signature: string) =>
      fetch(`${stack.base}/v1/integrations/slack/actions`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-slack-signature": signature, "x-slack-request-timestamp": ts },
        body: press,
      });
    expect((await post(sign("wrong-secret"))).status).toBe(401);
    const decided = await post(sign(SLACK_SECRET));
    expect(decided.status).toBe(200);
    expect(await decided.json()).toMatchObject({ approval_id: approvalId, status: "approved", decided_by: manager.operator_id });

    const applied = await stack.api("/v1/admin/ticks/topology", { method: "POST" });
    expect(applied.body.summary.resolved).toEqual([{ proposal_id: tick.body.summary.proposal.proposal_id, outcome: "approved" }]);
    const rerouted = await stack.api("/v1/tasks", {
      body: { title: "reconcile again", mode: "goal", assignee: "alice", tags: ["billing"], manual: true },
    });
    expect(rerouted.body).toMatchObject({ assigned_to: "bob", routed_by: "override" });

    const types = (await stack.api("/v1/events?type=topology.")).body.events.map((e: { type: string }) => e.type);
    expect(types).toEqual(["topology.proposed", "topology.approved"]);
    const delivered = await until("the delivery event", async () => {
      const events = (await stack.api(`/v1/events?type=approval.delivered&subject=${approvalId}`)).body.events;
      return events.length > 0 ? events : undefined;
    });
    expect(delivered[0].payload).toMatchObject({ channel: "slack", http_status: 200 });
  });
});
