import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/workers/app";
import { ADMIN_TOKEN, call, createOperator } from "../factories";

describe("admin test clock", () => {
  it("advances the time every endpoint sees, and stamps events with it", async () => {
    const before = await call("/v1/admin/clock");
    const res = await call("/v1/admin/clock", { body: { advance_ms: 24 * 3_600_000 } });
    expect(res.status).toBe(200);
    expect(res.body.offset_ms - before.body.offset_ms).toBe(24 * 3_600_000);
    const skew = Date.parse(res.body.now) - Date.now();
    expect(skew).toBeGreaterThan(23 * 3_600_000);
    const feed = await call("/v1/events?type=clock.");
    expect(Date.parse(feed.body.events.at(-1).created_at)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    const health = await call("/v1/health", { token: null });
    expect(Date.parse(health.body.now)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
  });

  it("sets an absolute time", async () => {
    const res = await call("/v1/admin/clock", { body: { set: "2030-01-01T00:00:00.000Z" } });
    expect(res.status).toBe(200);
    expect(Math.abs(Date.parse(res.body.now) - Date.parse("2030-01-01T00:00:00.000Z"))).toBeLessThan(5_000);
    const read = await call("/v1/admin/clock");
    expect(Math.abs(Date.parse(read.body.now) - Date.parse("2030-01-01T00:00:00.000Z"))).toBeLessThan(60_000);
  });

  it("rejects a body that is neither advance_ms nor set", async () => {
    const res = await call("/v1/admin/clock", { body: { advance_ms: 5, set: "2030-01-01T00:00:00Z" } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
  });

  it("does not exist in production: POST answers 404 and the offset is untouched", async () => {
    const prodEnv = { ...env, ENVIRONMENT: "production" as const };
    const res = await app.request(
      "/v1/admin/clock",
      {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ advance_ms: 1000 }),
      },
      prodEnv,
    );
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await res.json()).toMatchObject({ code: "not_found" });
    const read = await app.request("/v1/admin/clock", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }, prodEnv);
    expect(await read.json()).toMatchObject({ offset_ms: 0 });
  });

  it("does not exist in production for any caller: POST answers 404 without a token and with a non-admin token too", async () => {
    const prodEnv = { ...env, ENVIRONMENT: "production" as const };
    const viewer = await createOperator("viewer", "clock-prod-viewer");
    for (const authorization of [undefined, `Bearer ${viewer}`, "Bearer not-a-token"]) {
      const res = await app.request(
        "/v1/admin/clock",
        {
          method: "POST",
          headers: { ...(authorization ? { authorization } : {}), "content-type": "application/json" },
          body: JSON.stringify({ advance_ms: 1000 }),
        },
        prodEnv,
      );
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found" });
    }
  });
});
