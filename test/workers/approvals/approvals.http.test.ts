import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { consumeApproval, requestApproval } from "../../../src/approvals/broker";
import { getDb } from "../../../src/db/client";
import { AppError } from "../../../src/lib/errors";
import { call, createOperator } from "../../factories";
import { advanceClock, decide, eventsOf, manager } from "../../factories/org";

const db = () => getDb(env.DB);
const now = async () => new Date((await call("/v1/admin/clock")).body.now);
const action = (to = "bob") => ({
  kind: "topology_reroute",
  subject: "billing:alice",
  params: { task_class: "billing", from_agent: "alice", to_agent: to },
});

async function request(ttlSecs = 3600, evidence: Record<string, unknown> = { samples: 5 }) {
  return requestApproval(env, db(), { action: action(), evidence, ttlSecs, requestedBy: "test" }, await now());
}

describe("approvals through the API", () => {
  it("lists a pending request with its evidence and action hash, and shows it by id", async () => {
    const mgr = await manager("lists");
    const { approval_id, status, action_hash } = await request(3600, { samples: 5, reject_rate: 0.8 });
    expect(status).toBe("pending");
    const list = await call("/v1/approvals?status=pending", { token: mgr.token });
    expect(list.status).toBe(200);
    expect(list.body.approvals.find((a: { approval_id: string }) => a.approval_id === approval_id)).toMatchObject({
      action_kind: "topology_reroute",
      subject: "billing:alice",
      evidence: { samples: 5, reject_rate: 0.8 },
      status: "pending",
      action_hash,
    });
    const one = await call(`/v1/approvals/${approval_id}`);
    expect(one.body).toMatchObject({ approval_id, status: "pending" });
    expect(one.body.decided_by).toBeUndefined();
    expect((await call("/v1/approvals/apr_ffffffffffffffff")).status).toBe(404);
  });

  it("approves as the named manager, records who and when, and refuses a second decide with 409", async () => {
    const mgr = await manager("ana");
    const { approval_id } = await request();
    const res = await decide(approval_id, "approve", mgr.token, "looks right");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ approval_id, status: "approved", decided_by: mgr.id, decided_via: "api", note: "looks right" });
    expect(res.body.decided_at).toBeTruthy();
    const again = await decide(approval_id, "deny", mgr.token);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "already_decided", current_status: "approved" });
    const trail = (await eventsOf("approval.")).filter((e) => e.subject === approval_id).map((e) => e.type);
    expect(trail).toEqual(["approval.requested", "approval.approved"]);
  });

  it("keeps a denial apart from an expiry everywhere", async () => {
    const mgr = await manager("dan");
    const denied = await request();
    const expiring = await request(60);
    expect((await decide(denied.approval_id, "deny", mgr.token)).body.status).toBe("denied");
    await advanceClock(61_000);
    expect((await call(`/v1/approvals/${expiring.approval_id}`)).body.status).toBe("expired");
    const deniedList = (await call("/v1/approvals?status=denied")).body.approvals.map((a: { approval_id: string }) => a.approval_id);
    const expiredList = (await call("/v1/approvals?status=expired")).body.approvals.map((a: { approval_id: string }) => a.approval_id);
    expect(deniedList).toContain(denied.approval_id);
    expect(deniedList).not.toContain(expiring.approval_id);
    expect(expiredList).toContain(expiring.approval_id);
    expect(expiredList).not.toContain(denied.approval_id);
    const types = (await eventsOf("approval.")).filter((e) => e.subject === expiring.approval_id).map((e) => e.type);
    expect(types).toEqual(["approval.requested", "approval.expired"]);
  });

  it("answers 409 approval_expired for a decide after the TTL, and records the expiry once", async () => {
    const mgr = await manager("late");
    const { approval_id } = await request(60);
    await advanceClock(60_000);
    const res = await decide(approval_id, "approve", mgr.token);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("approval_expired");
    expect((await decide(approval_id, "approve", mgr.token)).status).toBe(409);
    expect((await call(`/v1/approvals/${approval_id}`)).body.status).toBe("expired");
    expect((await eventsOf("approval.expired")).filter((e) => e.subject === approval_id)).toHaveLength(1);
  });

  it("the approvals tick expires overdue requests and leaves live ones pending", async () => {
    await manager("ticker");
    const overdue = await request(60);
    const live = await request(86_400);
    await advanceClock(120_000);
    const res = await call("/v1/admin/ticks/approvals", { method: "POST" });
    expect(res.status).toBe(200);
    expect(res.body.summary.expired).toBeGreaterThanOrEqual(1);
    expect((await call(`/v1/approvals/${overdue.approval_id}`)).body.status).toBe("expired");
    expect((await call(`/v1/approvals/${live.approval_id}`)).body.status).toBe("pending");
  });

  it("lets exactly one of 10 concurrent decides win", async () => {
    const managers = await Promise.all(Array.from({ length: 10 }, (_, i) => manager(`racer-${i}`)));
    const { approval_id } = await request();
    const results = await Promise.all(managers.map((m, i) => decide(approval_id, i % 2 ? "approve" : "deny", m.token)));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(9);
    const final = (await call(`/v1/approvals/${approval_id}`)).body;
    expect(final.status).toBe(winners[0]!.body.status);
    expect(final.decided_by).toBe(winners[0]!.body.decided_by);
    const decisions = (await eventsOf("approval.")).filter((e) => e.subject === approval_id && e.type !== "approval.requested");
    expect(decisions).toHaveLength(1);
  });

  it("refuses deciders who are not named managers: viewers (403), the bootstrap ADMIN_TOKEN (403), nobody (401)", async () => {
    await manager("someone");
    const { approval_id } = await request();
    const viewer = await createOperator("viewer", "vera");
    expect((await decide(approval_id, "approve", viewer)).status).toBe(403);
    const bootstrap = await call(`/v1/approvals/${approval_id}/decide`, { body: { decision: "approve" } });
    expect(bootstrap.status).toBe(403);
    expect(bootstrap.body.reason).toBe("bootstrap_token_not_a_decider");
    expect((await call(`/v1/approvals/${approval_id}/decide`, { token: null, body: { decision: "approve" } })).status).toBe(401);
    expect((await call(`/v1/approvals/${approval_id}`)).body.status).toBe("pending");
  });

  it("validates the decision body and leaves the approval untouched", async () => {
    const mgr = await manager("strict");
    const { approval_id } = await request();
    for (const body of [{ decision: "maybe" }, { decision: "approve", extra: 1 }, { decision: "approve", note: "a\u202Eb" }, {}]) {
      const res = await call(`/v1/approvals/${approval_id}/decide`, { token: mgr.token, body });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe("validation_failed");
    }
    expect((await call(`/v1/approvals/${approval_id}`)).body.status).toBe("pending");
  });
});

describe("consuming an approval (the code that carries the action out)", () => {
  it("is single use: the first consume marks it, the second is refused", async () => {
    const mgr = await manager("single");
    const { approval_id } = await request();
    await decide(approval_id, "approve", mgr.token);
    const used = await consumeApproval(db(), approval_id, action(), "test-executor", await now());
    expect(used.consumed_at).toBeTruthy();
    const again = await consumeApproval(db(), approval_id, action(), "test-executor", await now()).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(AppError);
    expect((again as AppError).code).toBe("approval_consumed");
    expect((await eventsOf("approval.consumed")).filter((e) => e.subject === approval_id)).toHaveLength(1);
  });

  it("refuses with 409 action_changed (audited) when the action differs from the approved one, and stays unused", async () => {
    const mgr = await manager("hash");
    const { approval_id, action_hash } = await request();
    await decide(approval_id, "approve", mgr.token);
    const err = await consumeApproval(db(), approval_id, action("mallory"), "test-executor", await now()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("action_changed");
    expect((err as AppError).status).toBe(409);
    const audit = (await eventsOf("approval.action_changed")).filter((e) => e.subject === approval_id);
    expect(audit).toHaveLength(1);
    expect(audit[0]!.payload).toMatchObject({ approved_hash: action_hash, reason: "action_changed" });
    expect((await call(`/v1/approvals/${approval_id}`)).body.consumed_at).toBeUndefined();
  });

  it("cannot consume a request nobody approved", async () => {
    await manager("nobody-approved");
    const { approval_id } = await request();
    const err = await consumeApproval(db(), approval_id, action(), "x", await now()).catch((e: unknown) => e);
    expect((err as AppError).code).toBe("not_approved");
  });
});
