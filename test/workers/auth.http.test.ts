import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { credentials } from "../../src/db/schema";
import { authenticate } from "../../src/lib/auth";
import { sha256Hex } from "../../src/lib/crypto";
import { call, createOperator, createRunner, mintToken } from "../factories";

describe("authentication", () => {
  it("returns 401 problem+json without a token", async () => {
    const res = await call("/v1/events", { token: null });
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.body).toMatchObject({ code: "unauthorized", status: 401 });
  });

  it("returns 401 for a token that is not ours, including a near-miss of a real one", async () => {
    const real = await createOperator("viewer");
    for (const token of ["nonsense", `${real.slice(0, -1)}${real.endsWith("0") ? "1" : "0"}`, "test-admin-tokeN"]) {
      const res = await call("/v1/events", { token });
      expect(res.status, token).toBe(401);
      expect(res.body.code).toBe("unauthorized");
    }
  });

  it("hashes with SHA-256 as the standard's test vectors say (lowercase hex, 64 digits)", async () => {
    expect(await sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("stores only the SHA-256 of a token's secret", async () => {
    const token = await createOperator("viewer", "hash-check");
    const [id, secret] = token.split(".");
    const row = await getDb(env.DB).select().from(credentials).where(eq(credentials.id, id!)).get();
    expect(row?.secretHash).toBe(await sha256Hex(secret!));
    expect(JSON.stringify(row)).not.toContain(secret);
  });

  it("lets the ADMIN_TOKEN do admin things", async () => {
    expect((await call("/v1/config/runner")).status).toBe(200);
    expect((await call("/v1/admin/clock")).status).toBe(200);
  });
});

describe("operator roles viewer < manager < admin", () => {
  it("lets a viewer read but not run ticks or change config", async () => {
    const viewer = await createOperator("viewer");
    expect((await call("/v1/events", { token: viewer })).status).toBe(200);
    expect((await call("/v1/config/runner", { token: viewer })).status).toBe(200);
    const tick = await call("/v1/admin/ticks/leases", { method: "POST", token: viewer });
    expect(tick.status).toBe(403);
    expect(tick.body.code).toBe("forbidden");
    expect((await call("/v1/config/runner", { method: "PUT", token: viewer, body: {} })).status).toBe(403);
  });

  it("lets a manager run ticks but not change config or mint tokens", async () => {
    const manager = await createOperator("manager");
    expect((await call("/v1/admin/ticks/leases", { method: "POST", token: manager })).status).toBe(200);
    expect((await call("/v1/config/runner", { method: "PUT", token: manager, body: {} })).status).toBe(403);
    expect((await call("/v1/admin/runners", { token: manager, body: { name: "x" } })).status).toBe(403);
  });

  it("lets an admin operator change config and mint tokens", async () => {
    const admin = await createOperator("admin");
    expect((await call("/v1/config/runner", { method: "PUT", token: admin, body: {} })).status).toBe(200);
    expect((await call("/v1/admin/operators", { token: admin, body: { name: "v2", role: "viewer" } })).status).toBe(201);
  });
});

describe("runner, node and member tokens", () => {
  it("lets a runner token use the runner protocol and nothing operator-only", async () => {
    const runner = await createRunner();
    expect((await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, runtimes: ["offline"] } })).status).toBe(200);
    expect((await call("/v1/events", { token: runner.token })).status).toBe(403);
    expect((await call("/v1/admin/jobs", { token: runner.token, body: {} })).status).toBe(403);
  });

  it("keeps operators (even admins) out of the runner protocol", async () => {
    const res = await call("/v1/runner/lease", { body: { capacity: 1, runtimes: ["offline"] } });
    expect(res.status).toBe(403);
  });

  it("resolves node and member tokens to their principals and keeps them out of operator and runner endpoints", async () => {
    const node = await mintToken("node", { subject: "node_0123456789abcdef" });
    const member = await mintToken("member", { subject: "task_1/round_1/verifier", expiresAt: new Date(Date.now() + 3_600_000) });
    expect(await authenticate(env, node.token, new Date())).toMatchObject({ kind: "node", nodeId: "node_0123456789abcdef" });
    expect(await authenticate(env, member.token, new Date())).toMatchObject({ kind: "member", scope: "task_1/round_1/verifier" });
    for (const token of [node.token, member.token]) {
      expect((await call("/v1/events", { token })).status).toBe(403);
      expect((await call("/v1/runner/lease", { token, body: { capacity: 1, runtimes: ["offline"] } })).status).toBe(403);
    }
  });

  it("rejects a member token once it has expired, by the clock", async () => {
    const member = await mintToken("member", { subject: "t/r/executor", expiresAt: new Date(Date.now() + 60_000) });
    expect(await authenticate(env, member.token, new Date())).not.toBeNull();
    expect(await authenticate(env, member.token, new Date(Date.now() + 120_000))).toBeNull();
  });

  it("rejects a revoked token", async () => {
    const runner = await createRunner("revoked");
    await getDb(env.DB).update(credentials).set({ revokedAt: new Date().toISOString() }).where(eq(credentials.id, runner.id));
    const res = await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, runtimes: ["offline"] } });
    expect(res.status).toBe(401);
  });
});
