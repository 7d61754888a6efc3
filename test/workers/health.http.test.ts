import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("GET /v1/health", () => {
  it("answers ok with the database reachable and needs no token", async () => {
    const res = await exports.default.fetch("http://crewplane.test/v1/health");
    expect(res.status).toBe(200);
    const body = await res.json<{ ok: boolean; db: string; version: string }>();
    expect(body).toMatchObject({ ok: true, db: "ok" });
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("answers an unknown route with problem+json not_found", async () => {
    const res = await exports.default.fetch("http://crewplane.test/v1/nope");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await res.json()).toMatchObject({ status: 404, code: "not_found" });
  });
});
