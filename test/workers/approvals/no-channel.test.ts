import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { configuredChannels } from "../../../src/approvals/channels";
import { approvalsConfig } from "../../../src/approvals/config";
import { getDb } from "../../../src/db/client";
import { topologyConfig } from "../../../src/topology/config";
import { proposeOnce } from "../../../src/topology/proposals";
import { call, createOperator } from "../../factories";
import { advanceClock, decide, DONE, eventsOf, FAILED, manager, setConfig, settledTasks, team, tick } from "../../factories/org";

// This file starts with no operator at all: only the bootstrap ADMIN_TOKEN, which is not a decider.
const clockNow = async () => new Date((await call("/v1/admin/clock")).body.now);
const ask = async () =>
  requestApproval(
    env,
    getDb(env.DB),
    { action: { kind: "delete_repo", subject: "repo:x", params: { name: "x" } }, evidence: {}, ttlSecs: 3600, requestedBy: "test" },
    await clockNow(),
  );

describe("no_channel: nobody can decide, decided at request time, fail-closed", () => {
  beforeEach(() => {
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("ok", { status: 200 }));
  });
  afterEach(() => vi.restoreAllMocks());

  it("D5 does not start without someone to approve, and stops proposing when the last decider goes", async () => {
    await team("lead", ["alice", "bob"]);
    // Not even switched on: the seed allows no proposal mechanism without its human gate.
    const refusedOn = await call("/v1/config/topology_evolution", { method: "PUT", body: { enabled: true, tick_secs: 60 } });
    expect(refusedOn.status).toBe(409);
    expect(refusedOn.body).toMatchObject({ code: "approval_broker_unavailable", deciders: 0, channels: [] });
    expect(refusedOn.body.detail).toContain("manager");
    expect((await call("/v1/config/topology_evolution")).body.enabled).toBe(false);
    await settledTasks("alice", "billing", [FAILED, FAILED, FAILED, FAILED, FAILED]);
    await settledTasks("bob", "billing", [DONE, DONE, DONE, DONE, DONE]);
    expect(await tick("topology")).toEqual({ enabled: false });

    const mia = await manager("first-manager");
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60 });
    const proposed = await tick("topology");
    expect(proposed.proposal).toMatchObject({ from_agent: "alice", to_agent: "bob", status: "pending" });
    await decide(proposed.proposal.approval_id, "deny", mia.token);
    expect((await tick("topology")).resolved).toEqual([{ proposal_id: proposed.proposal.proposal_id, outcome: "denied" }]);

    // The last decider leaves while D5 is on: it goes on judging what it routed, and proposes nothing.
    await call(`/v1/admin/operators/${mia.id}`, { method: "DELETE" });
    await advanceClock(61_000);
    const refused = await tick("topology");
    expect(refused).toMatchObject({ ran: true, proposal: null, refused: "approval_broker_unavailable" });
    const event = (await eventsOf("topology.refused")).at(-1)!;
    expect(event.payload).toMatchObject({ reason: "approval_broker_unavailable", deciders: 0, channels: [] });
    expect((await call("/v1/topology")).body).toMatchObject({ approval_broker_available: false, pending: [] });
    // Back to nobody and D5 off for the rest of this file (switching off is always allowed).
    await setConfig("topology_evolution", {});
  });

  it("records a proposal whose approval came back no_channel as rejected, never pending", async () => {
    await settledTasks("alice", "refunds", [FAILED, FAILED, FAILED, FAILED, FAILED]);
    await settledTasks("bob", "refunds", [DONE, DONE, DONE, DONE, DONE]);
    // Called past the tick's own availability check, as a broker that lost its last decider mid-tick would be.
    await advanceClock(61_000);
    const result = await proposeOnce(env, getDb(env.DB), topologyConfig.schema.parse({ enabled: true, tick_secs: 60 }), await clockNow());
    expect(result).toMatchObject({ task_class: "refunds", status: "no_channel" });
    const rejected = (await eventsOf("topology.rejected")).at(-1)!;
    expect(rejected.payload).toMatchObject({ task_class: "refunds", reason: "no_channel" });
    expect((await call("/v1/topology")).body.pending).toEqual([]);
  });

  it("answers no_channel when the only admin is the bootstrap token and no channel is configured", async () => {
    const { approval_id, status } = await ask();
    expect(status).toBe("no_channel");
    const view = (await call(`/v1/approvals/${approval_id}`)).body;
    expect(view).toMatchObject({ status: "no_channel", channels: [] });
    expect((await call("/v1/approvals?status=pending")).body.approvals.map((a: { approval_id: string }) => a.approval_id)).not.toContain(
      approval_id,
    );
    expect((await call("/v1/approvals?status=no_channel")).body.approvals.map((a: { approval_id: string }) => a.approval_id)).toContain(
      approval_id,
    );
    const types = (await eventsOf("approval.")).filter((e) => e.subject === approval_id).map((e) => e.type);
    expect(types).toEqual(["approval.requested", "approval.no_channel"]);
  });

  it("does not count viewers or revoked managers as deciders", async () => {
    await createOperator("viewer", "only-a-viewer");
    const revoked = await manager("left-the-company");
    await call(`/v1/admin/operators/${revoked.id}`, { method: "DELETE" });
    expect((await ask()).status).toBe("no_channel");
  });

  it("stays no_channel for ever: a manager arriving later cannot decide it (409)", async () => {
    const { approval_id } = await ask();
    const late = await manager("late-manager");
    const res = await decide(approval_id, "approve", late.token);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "already_decided", current_status: "no_channel" });
    await call(`/v1/admin/operators/${late.id}`, { method: "DELETE" });
  });

  it("counts a configured channel as a way to reach a decider", async () => {
    await setConfig("approvals", { webhook: { enabled: true, url: "https://receiver.test/hook" } });
    const { status, approval_id } = await ask();
    expect(status).toBe("pending");
    expect((await call(`/v1/approvals/${approval_id}`)).body.channels).toEqual(["webhook"]);
    await setConfig("approvals", {});
  });

  it("counts a channel only when enabled and holding its secrets", () => {
    const on = approvalsConfig.schema.parse({ slack: { enabled: true }, webhook: { enabled: true, url: "https://r.test/h" } });
    const all = { SLACK_WEBHOOK_URL: "u", SLACK_SIGNING_SECRET: "s", APPROVAL_WEBHOOK_SECRET: "w" };
    expect(configuredChannels(all, on)).toEqual(["slack", "webhook"]);
    expect(configuredChannels({ ...all, SLACK_SIGNING_SECRET: undefined }, on)).toEqual(["webhook"]);
    expect(configuredChannels({ ...all, APPROVAL_WEBHOOK_SECRET: undefined }, on)).toEqual(["slack"]);
    expect(configuredChannels(all, approvalsConfig.schema.parse({}))).toEqual([]);
  });

  it("never puts a channel secret in the config section or its events", async () => {
    const cfg = await call("/v1/config/approvals");
    const text = JSON.stringify(cfg.body) + JSON.stringify(await eventsOf(""));
    for (const secret of [env.SLACK_WEBHOOK_URL!, env.SLACK_SIGNING_SECRET!, env.APPROVAL_WEBHOOK_SECRET!])
      expect(text).not.toContain(secret);
  });
});
