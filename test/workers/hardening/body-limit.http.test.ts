import { describe, expect, it } from "vitest";
import { MAX_REQUEST_BODY_BYTES } from "../../../src/workers/middleware/body-limit";
import { call } from "../../factories";
import { send, streamed, utf8 } from "../../factories/http";
import { snapshot } from "../../factories/state";

const MiB = 1024 * 1024;
const json = { "content-type": "application/json" };

/** A JSON object padded with `pad` to exactly `bytes` UTF-8 bytes (pad is one byte per char). */
function jsonOfBytes(bytes: number, fields: Record<string, unknown> = {}) {
  const head = JSON.stringify({ ...fields, pad: "" });
  return head.slice(0, -2) + "x".repeat(bytes - utf8(head).length) + '"}';
}

describe("request body limit (1 MiB, counted in bytes, before parsing)", () => {
  it("is the documented 1 MiB", () => {
    expect(MAX_REQUEST_BODY_BYTES).toBe(MiB);
  });

  it("answers 413 payload_too_large naming the limit when Content-Length says the body is over it, and changes nothing", async () => {
    await call("/v1/config/runner", { method: "PUT", body: { max_attempts: 6 } });
    const before = await snapshot();
    const res = await send("/v1/config/runner", { method: "PUT", headers: json, body: jsonOfBytes(MiB + 1, { max_attempts: 2 }) });
    expect(res.status).toBe(413);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.json).toMatchObject({ code: "payload_too_large", status: 413, limit_bytes: MiB });
    expect(res.json.detail).toContain("1048576");
    expect(await snapshot()).toEqual(before);
  });

  it("lets a body of exactly 1 MiB through to validation (422 for the unknown pad field, not 413)", async () => {
    const body = jsonOfBytes(MiB, { max_attempts: 2 });
    expect(utf8(body).length).toBe(MiB);
    const res = await send("/v1/config/runner", { method: "PUT", headers: json, body });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe("validation_failed");
  });

  it("counts a streamed body with no Content-Length as it arrives", async () => {
    const before = await snapshot();
    const res = await send("/v1/admin/operators", {
      headers: json,
      body: streamed(jsonOfBytes(2 * MiB, { name: "streamed", role: "viewer" })),
    });
    expect(res.status).toBe(413);
    expect(res.json.limit_bytes).toBe(MiB);
    expect(await snapshot()).toEqual(before);
  });

  it("does not trust a Content-Length that understates the body", async () => {
    const before = await snapshot();
    const res = await send("/v1/admin/operators", {
      headers: { ...json, "content-length": "40" },
      body: jsonOfBytes(2 * MiB, { name: "liar", role: "viewer" }),
    });
    expect(res.status).toBe(413);
    expect(await snapshot()).toEqual(before);
  });

  it("still serves a small streamed body", async () => {
    const res = await send("/v1/admin/operators", {
      headers: json,
      body: streamed(JSON.stringify({ name: "small-stream", role: "viewer" }), 7),
    });
    expect(res.status).toBe(201);
    expect(res.json.name).toBe("small-stream");
  });

  it("counts bytes, not characters: 600,000 two-byte characters are over the limit", async () => {
    const text = JSON.stringify({ name: "é".repeat(600_000), role: "viewer" });
    expect(text.length).toBeLessThan(MiB);
    for (const body of [text, streamed(text)]) {
      const res = await send("/v1/admin/operators", { headers: json, body });
      expect(res.status).toBe(413);
    }
  });

  it("refuses an oversized body on any endpoint, even one that reads no body, before it runs", async () => {
    const before = await snapshot();
    const res = await send("/v1/admin/ticks/leases", {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: streamed("x".repeat(MiB + 10)),
    });
    expect(res.status).toBe(413);
    expect(await snapshot()).toEqual(before);
  });

  it("refuses an oversized body before it authenticates the caller", async () => {
    const res = await send("/v1/admin/operators", { token: null, headers: json, body: jsonOfBytes(MiB + 1) });
    expect(res.status).toBe(413);
  });
});
