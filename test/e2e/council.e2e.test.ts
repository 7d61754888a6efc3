import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRunner, startWorker, type RunnerProcess } from "./stack";

interface Push {
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A node's webhook endpoint: a plain local HTTP server that records every push it gets. */
function webhookReceiver() {
  const pushes: Push[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      pushes.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  const listening = new Promise<string>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`)),
  );
  return { pushes, listening, close: () => new Promise<void>((r) => server.close(() => r())) };
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

const PROPOSAL = {
  title: "Publish a weekly digest of council records",
  body: "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.",
  kind: "general",
};

describe("a council session through the whole stack", () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;
  let runner: RunnerProcess;
  const hook = webhookReceiver();

  beforeAll(async () => {
    stack = await startWorker();
    const created = await stack.api("/v1/admin/runners", { body: { name: "e2e-council" } });
    runner = startRunner(stack.base, created.body.token);
  });

  afterAll(async () => {
    await runner?.stop();
    await stack?.close();
    await hook.close();
  });

  it("deliberates, has the real runner write the synthesis (offline: template), and pushes signed events to a verified webhook", async () => {
    const { api } = stack;
    const url = await hook.listening;
    const nodes: { node_id: string; token: string; webhook_secret?: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await api("/v1/nodes", { body: { name: `e2e-${i}`, model_tier: 3, ...(i === 0 ? { webhook_url: url } : {}) } });
      expect(res.status).toBe(201);
      nodes.push({ node_id: res.body.node_id, token: res.body.node_secret, webhook_secret: res.body.webhook_secret });
      await api(`/v1/admin/nodes/${res.body.node_id}`, {
        method: "PATCH",
        body: { reputation: 50, ...(i === 0 ? { webhook_verified: true } : {}) },
      });
      await api(`/v1/nodes/${res.body.node_id}/heartbeat`, { token: res.body.node_secret, body: {} });
    }
    const proposer = await api("/v1/nodes", { body: { name: "e2e-proposer", model_tier: 4 } });
    await api(`/v1/admin/nodes/${proposer.body.node_id}`, { method: "PATCH", body: { reputation: 65 } });
    await api(`/v1/nodes/${proposer.body.node_id}/heartbeat`, { token: proposer.body.node_secret, body: {} });

    const submitted = await api("/v1/council/proposals", { token: proposer.body.node_secret, body: PROPOSAL });
    expect(submitted.status).toBe(201);
    const sid = submitted.body.session_id as string;
    const view = async () => (await api(`/v1/council/sessions/${sid}`)).body;
    const step = async () => {
      await api("/v1/admin/clock", { body: { advance_ms: 11_000 } });
      await api("/v1/admin/ticks/council", { method: "POST" });
    };
    let s = await view();
    expect(s.phase).toBe("diverge"); // proposer reputation ≥ 60: seconded automatically
    const seated = nodes.filter((n) => s.members.some((m: { node_id: string }) => m.node_id === n.node_id));
    expect(seated).toHaveLength(6);
    for (const n of seated)
      expect(
        (await api(`/v1/council/sessions/${sid}/dialog`, { token: n.token, body: { dialog_type: "assess", content: "Sound plan." } }))
          .status,
      ).toBe(201);
    await step();
    for (const n of seated)
      await api(`/v1/council/sessions/${sid}/dialog`, { token: n.token, body: { dialog_type: "develop", content: "Agreed." } });
    await step();
    s = await view();
    expect(s.phase).toBe("voting");
    for (const n of seated) {
      const v = await api(`/v1/council/sessions/${sid}/dialog`, {
        token: n.token,
        body: { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: s.proposal_hash },
      });
      expect(v.status).toBe(201);
    }
    await step();

    // the real runner leases the synthesis job (runtime offline by default) and the owner handler decides
    const decided = await until("the decision", async () => {
      const cur = await view();
      return cur.phase === "approved" ? cur : undefined;
    });
    expect(decided.decision).toMatchObject({
      outcome: "approved",
      synthesis_source: "template",
      synthesis_note: "synthesis_offline_runtime",
    });
    const job = await api(`/v1/admin/jobs/${decided.synthesis.job_id}`);
    expect(job.body).toMatchObject({ status: "completed", result: { runtime: "offline" } });
    const principles = await api("/v1/governance/principles");
    expect(principles.body.principles.map((p: { source_session_id: string }) => p.source_session_id)).toContain(sid);

    // the webhook node got its events pushed, each signed with its webhook secret
    const hooked = nodes[0]!;
    const pushed = await until("the decision notification push", async () => {
      const types = hook.pushes.map((p) => JSON.parse(p.body).type);
      return types.includes("council_decision_notification") ? hook.pushes : undefined;
    });
    expect(pushed.map((p) => JSON.parse(p.body).type)).toEqual(
      expect.arrayContaining(["council_invite", "council_vote", "council_decision_notification"]),
    );
    for (const p of pushed) {
      const ts = String(p.headers["x-crewplane-timestamp"]);
      const expected = `sha256=${createHmac("sha256", hooked.webhook_secret!).update(`${ts}.${p.body}`).digest("hex")}`;
      expect(p.headers["x-crewplane-signature"]).toBe(expected);
      expect(JSON.parse(p.body).node_id).toBe(hooked.node_id);
    }
    // pushed events are off the heartbeat list; the other nodes still find theirs by heartbeat
    const hookedBeat = await api(`/v1/nodes/${hooked.node_id}/heartbeat`, { token: hooked.token, body: {} });
    const pushedIds = new Set(pushed.map((p) => JSON.parse(p.body).id));
    expect(hookedBeat.body.pending_events.filter((e: { id: string }) => pushedIds.has(e.id))).toEqual([]);
    const other = seated.find((n) => n !== hooked)!;
    const otherBeat = await api(`/v1/nodes/${other.node_id}/heartbeat`, { token: other.token, body: {} });
    expect(otherBeat.body.pending_events.map((e: { type: string }) => e.type)).toEqual(
      expect.arrayContaining(["council_invite", "council_vote", "council_decision_notification"]),
    );
  });
});
