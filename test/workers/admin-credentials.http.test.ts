import { describe, expect, it } from "vitest";
import { call, createOperator, createRunner } from "../factories";

describe("runner and operator tokens", () => {
  it("lists runners with when each last asked for work; a runner that never polled shows null, not a made-up time", async () => {
    const polled = await createRunner("polled");
    const idle = await createRunner("idle");
    await call("/v1/runner/lease", { token: polled.token, body: { capacity: 1, runtimes: ["offline"] } });
    const viewer = await createOperator("viewer");
    const res = await call("/v1/admin/runners", { token: viewer });
    expect(res.status).toBe(200);
    const byId = new Map(res.body.runners.map((r: { runner_id: string }) => [r.runner_id, r]));
    expect(byId.get(polled.id)).toMatchObject({
      name: "polled",
      last_poll_at: expect.stringMatching(/Z$/),
      leased_jobs: 0,
      revoked_at: null,
    });
    expect(byId.get(idle.id)).toMatchObject({ name: "idle", last_poll_at: null });
    expect(JSON.stringify(res.body)).not.toContain(polled.token.split(".")[1]);
  });

  it("revokes a runner token so its next request is 401, records it, and keeps the first revocation time", async () => {
    const runner = await createRunner("to-revoke");
    const first = await call(`/v1/admin/runners/${runner.id}`, { method: "DELETE" });
    expect(first.status).toBe(200);
    expect(first.body.revoked_at).toMatch(/Z$/);
    expect((await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, runtimes: ["offline"] } })).status).toBe(401);
    const again = await call(`/v1/admin/runners/${runner.id}`, { method: "DELETE" });
    expect(again.body.revoked_at).toBe(first.body.revoked_at);
    const feed = await call(`/v1/events?type=runner.revoked&subject=${runner.id}`);
    expect(feed.body.events).toHaveLength(1);
  });

  it("revokes an operator, and refuses to revoke a runner through the operators endpoint", async () => {
    const token = await createOperator("manager", "leaving");
    const id = token.split(".")[0]!;
    const runner = await createRunner("not-an-operator");
    expect((await call(`/v1/admin/operators/${runner.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await call(`/v1/admin/operators/${id}`, { method: "DELETE" })).status).toBe(200);
    expect((await call("/v1/admin/ticks/leases", { method: "POST", token })).status).toBe(401);
    const list = await call("/v1/admin/operators");
    expect(list.body.operators.find((o: { operator_id: string }) => o.operator_id === id)).toMatchObject({
      role: "manager",
      revoked_at: expect.any(String),
    });
  });

  it("lets only admins revoke", async () => {
    const runner = await createRunner("safe");
    const manager = await createOperator("manager");
    expect((await call(`/v1/admin/runners/${runner.id}`, { method: "DELETE", token: manager })).status).toBe(403);
  });
});
