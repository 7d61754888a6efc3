import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { configuredChannels } from "../../../src/approvals/channels";
import { approvalsConfig } from "../../../src/approvals/config";
import { getDb } from "../../../src/db/client";
import { call, createOperator } from "../../factories";
import { decide, eventsOf, manager, setConfig } from "../../factories/org";

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

  it("answers no_channel when the only admin is the bootstrap token and no channel is configured", async () => {
    const { approval_id, status } = await ask();
    expect(status).toBe("no_channel");
    const view = (await call(`/v1/approvals/${approval_id}`)).body;
    expect(view).toMatchObject({ status: "no_channel", channels: [] });
    expect((await call("/v1/approvals?status=pending")).body.approvals).toEqual([]);
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
