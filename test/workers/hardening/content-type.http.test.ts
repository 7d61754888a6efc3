import { describe, expect, it } from "vitest";
import { call, createRunner } from "../../factories";
import { send, utf8 } from "../../factories/http";
import { snapshot } from "../../factories/state";

const NOT_JSON: [string, Record<string, string>][] = [
  ["curl's default form type", { "content-type": "application/x-www-form-urlencoded" }],
  ["text/plain", { "content-type": "text/plain" }],
  ["multipart", { "content-type": "multipart/form-data; boundary=x" }],
  ["no content type at all", {}],
  ["JSON in another charset", { "content-type": "application/json; charset=iso-8859-1" }],
  ["a json-ish type that is not JSON", { "content-type": "application/jsonp" }],
];

describe("JSON endpoints refuse other content types with 415", () => {
  it("keeps the runner section when curl PUTs a form body (it used to reset it to defaults)", async () => {
    await call("/v1/config/runner", { method: "PUT", body: { max_attempts: 7 } });
    const before = await snapshot();
    const res = await send("/v1/config/runner", {
      method: "PUT",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "max_attempts=2",
    });
    expect(res.status).toBe(415);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.json).toMatchObject({ code: "unsupported_media_type", status: 415 });
    expect(res.json.detail).toContain("application/json");
    expect((await call("/v1/config/runner")).body.max_attempts).toBe(7);
    expect(await snapshot()).toEqual(before);
  });

  it.each(NOT_JSON)("answers 415 for %s and changes nothing", async (_name, headers) => {
    const before = await snapshot();
    const res = await send("/v1/config/runner", { method: "PUT", headers, body: utf8(JSON.stringify({ max_attempts: 2 })) });
    expect(res.status).toBe(415);
    expect(res.json.code).toBe("unsupported_media_type");
    expect(await snapshot()).toEqual(before);
  });

  it("applies to every JSON body route, creating nothing", async () => {
    const runner = await createRunner("ct-runner");
    const routes: [string, string, unknown, string?][] = [
      ["POST", "/v1/admin/operators", { name: "form-op", role: "viewer" }],
      ["POST", "/v1/admin/runners", { name: "form-runner" }],
      ["POST", "/v1/admin/clock", { advance_ms: 1000 }],
      ["POST", "/v1/admin/jobs", { kind: "utility", runtime: "offline", prompt: "hi" }],
      ["PUT", "/v1/config/runner", { max_attempts: 2 }],
      ["POST", "/v1/runner/lease", { capacity: 1, runtimes: ["offline"] }, runner.token],
    ];
    const before = await snapshot();
    for (const [method, path, body, token] of routes) {
      const res = await send(path, { method, token, headers: { "content-type": "text/plain" }, body: JSON.stringify(body) });
      expect(res.status, `${method} ${path}`).toBe(415);
    }
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ["application/json", "application/json"],
    ["a charset parameter", "application/json; charset=utf-8"],
    ["a quoted upper-case charset", 'application/json;charset="UTF-8"'],
    ["upper-case media type", "Application/JSON"],
    ["a +json structured suffix", "application/merge-patch+json"],
  ])("accepts %s", async (_name, contentType) => {
    const res = await send("/v1/config/runner", {
      method: "PUT",
      headers: { "content-type": contentType },
      body: JSON.stringify({ max_attempts: 3 }),
    });
    expect(res.status).toBe(200);
    expect(res.json.max_attempts).toBe(3);
  });

  it("still answers malformed JSON with a JSON content type as 400 malformed_request", async () => {
    const res = await send("/v1/admin/runners", { headers: { "content-type": "application/json" }, body: "{nope" });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe("malformed_request");
  });

  it("leaves endpoints that take no body alone", async () => {
    const res = await send("/v1/admin/ticks/leases", { method: "POST" });
    expect(res.status).toBe(200);
  });
});
