import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { getDb } from "../../../src/db/client";
import { call, createOperator } from "../../factories";
import { eventsOf, manager, setConfig } from "../../factories/org";
import { slackPress } from "../../factories/slack";

const clockNow = async () => new Date((await call("/v1/admin/clock")).body.now);
const nowSecs = async () => Math.floor((await clockNow()).getTime() / 1000);

async function pending() {
  const { approval_id } = await requestApproval(
    env,
    getDb(env.DB),
    {
      action: { kind: "topology_reroute", subject: "billing:alice", params: { to_agent: "bob" } },
      evidence: {},
      ttlSecs: 3600,
      requestedBy: "test",
    },
    await clockNow(),
  );
  return approval_id;
}

describe("POST /v1/integrations/slack/actions", () => {
  // With Slack on, requests are also posted to the incoming webhook: a fake endpoint, never the network.
  beforeEach(() => {
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("ok", { status: 200 }));
  });
  afterEach(() => vi.restoreAllMocks());

  it("refuses a bad signature, an old timestamp and a tampered body with 401, and decides nothing", async () => {
    const mia = await manager("mia");
    await setConfig("approvals", { slack: { enabled: true, operators: { U0MANAGER: mia.id } } });
    const id = await pending();
    const ts = await nowSecs();
    const bad = await slackPress(id, { tsSecs: ts, secret: "not-the-secret" });
    expect(bad.status).toBe(401);
    expect(bad.body).toMatchObject({ code: "unauthorized", reason: "bad_signature" });
    const old = await slackPress(id, { tsSecs: ts - 6 * 60 });
    expect(old.status).toBe(401);
    expect(old.body.reason).toBe("stale_timestamp");
    expect((await slackPress(id, { tsSecs: ts, tamper: true })).status).toBe(401);
    const unsigned = await call("/v1/integrations/slack/actions", { token: null, rawBody: "payload=%7B%7D" });
    expect(unsigned.status).toBe(401);
    expect((await call(`/v1/approvals/${id}`)).body.status).toBe("pending");
    const decisions = (await eventsOf("approval.")).filter(
      (e) => e.subject === id && ["approval.approved", "approval.denied"].includes(e.type),
    );
    expect(decisions).toEqual([]);
  });

  it("decides as the mapped operator when the signature and timestamp are good", async () => {
    const mia = await manager("mia-2");
    await setConfig("approvals", { slack: { enabled: true, operators: { U0MANAGER: mia.id } } });
    const id = await pending();
    const res = await slackPress(id, { tsSecs: (await nowSecs()) - 4 * 60, action: "crewplane_deny" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, approval_id: id, status: "denied", decided_by: mia.id });
    const view = (await call(`/v1/approvals/${id}`)).body;
    expect(view).toMatchObject({ status: "denied", decided_by: mia.id, decided_via: "slack" });
    const decided = (await eventsOf("approval.denied")).find((e) => e.subject === id);
    expect(decided?.payload).toMatchObject({ by: mia.id, via: "slack", slack_user_id: "U0MANAGER" });
    // A second press (the other button, someone else's click) is the same 409 as through the API.
    expect((await slackPress(id, { tsSecs: await nowSecs() })).status).toBe(409);
  });

  it("refuses a verified press from an unmapped user, a viewer or a revoked operator (403)", async () => {
    const viewer = await createOperator("viewer", "vic");
    const viewerId = (await call("/v1/admin/operators")).body.operators.find((o: { name: string }) => o.name === "vic").operator_id;
    const gone = await manager("gone");
    await call(`/v1/admin/operators/${gone.id}`, { method: "DELETE" });
    await setConfig("approvals", { slack: { enabled: true, operators: { U0VIEWER: viewerId, U0GONE: gone.id } } });
    expect(viewer).toBeTruthy();
    const id = await pending();
    const ts = await nowSecs();
    for (const user of ["U0NOBODY", "U0VIEWER", "U0GONE"]) {
      const res = await slackPress(id, { tsSecs: ts, user });
      expect(res.status, user).toBe(403);
      expect(res.body.reason).toBe("slack_user_not_a_decider");
    }
    expect((await call(`/v1/approvals/${id}`)).body.status).toBe("pending");
  });

  it("refuses presses while the Slack channel is disabled", async () => {
    const mia = await manager("mia-3");
    await setConfig("approvals", { slack: { enabled: false, operators: { U0MANAGER: mia.id } } });
    const id = await pending();
    const res = await slackPress(id, { tsSecs: await nowSecs() });
    expect(res.status).toBe(403);
    expect((await call(`/v1/approvals/${id}`)).body.status).toBe("pending");
  });
});
