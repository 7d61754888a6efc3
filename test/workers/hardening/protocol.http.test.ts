import { describe, expect, it } from "vitest";
import { app } from "../../../src/workers/app";
import { call, createRunner } from "../../factories";
import { send } from "../../factories/http";
import { snapshot } from "../../factories/state";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** Every concrete path the app serves and the methods registered for it, read from the app itself. */
function routeTable(): Map<string, Set<string>> {
  const table = new Map<string, Set<string>>();
  for (const route of app.routes) {
    if (route.method === "ALL" || route.path.includes("*")) continue;
    const methods = table.get(route.path) ?? new Set<string>();
    methods.add(route.method);
    table.set(route.path, methods);
  }
  return table;
}

const allowOf = (methods: Set<string>) => [...methods, ...(methods.has("GET") ? ["HEAD"] : [])].sort();
const parseAllow = (header: string | null) =>
  (header ?? "")
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean)
    .sort();

describe("405 Method Not Allowed with Allow, derived from the app's routes", () => {
  it("answers a wrong method on every known path with 405 problem+json and the path's methods in Allow", async () => {
    const runner = await createRunner("method-check");
    const table = routeTable();
    expect(table.size).toBeGreaterThan(8);
    const before = await snapshot();
    for (const [path, methods] of table) {
      const wrong = METHODS.find((m) => !methods.has(m))!;
      // A constrained parameter (`:id{proj_[0-9a-f]{16}}`) gets a value of its form; any other gets "x".
      const concrete = path.replace(/:[a-z_]+\{([a-z]+_)\[0-9a-f\]\{16\}\}/g, "$10000000000000000").replace(/:[a-z_]+/g, "x");
      const res = await send(concrete, { method: wrong, token: path.startsWith("/v1/runner/") ? runner.token : undefined });
      expect(res.status, `${wrong} ${path}`).toBe(405);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(res.json).toMatchObject({ code: "method_not_allowed", status: 405 });
      expect(parseAllow(res.headers.get("allow")), `${wrong} ${path}`).toEqual(allowOf(methods));
    }
    expect(await snapshot()).toEqual(before);
  });

  it("names the allowed methods, e.g. PATCH /v1/config/runner → Allow: GET, HEAD, PUT", async () => {
    const res = await send("/v1/config/runner", { method: "PATCH", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(405);
    expect(parseAllow(res.headers.get("allow"))).toEqual(["GET", "HEAD", "PUT"]);
    expect(res.json.allow).toEqual(["GET", "HEAD", "PUT"]);
  });

  it("keeps 404 for a path nobody serves, and for a missing resource on a known path", async () => {
    const unknown = await send("/v1/nowhere", { method: "DELETE" });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("allow")).toBeNull();
    const missing = await call("/v1/admin/jobs/job_nope");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("allow")).toBeNull();
  });
});

describe("WWW-Authenticate on every 401", () => {
  it("challenges a request without a token, with no error code (RFC 6750 §3.1)", async () => {
    const res = await send("/v1/events", { token: null });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="crewplane"');
  });

  it("challenges a request with another auth scheme, with no error code", async () => {
    const res = await send("/v1/events", { token: null, headers: { authorization: "Basic YWRtaW46YWRtaW4=" } });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="crewplane"');
  });

  it("says invalid_token when a bearer token was given but is not live (unknown or revoked)", async () => {
    const runner = await createRunner("to-revoke");
    await call(`/v1/admin/runners/${runner.id}`, { method: "DELETE" });
    const unknown = await send("/v1/events", { token: "nonsense" });
    const revoked = await send("/v1/runner/lease", {
      token: runner.token,
      headers: { "content-type": "application/json" },
      body: '{"capacity":1,"runtimes":["offline"]}',
    });
    for (const res of [unknown, revoked]) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="crewplane", error="invalid_token"');
    }
  });

  it("sends no challenge on a 403", async () => {
    const runner = await createRunner("not-an-operator");
    const res = await send("/v1/events", { token: runner.token });
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBeNull();
  });
});

describe("client-supplied X-Request-Id", () => {
  it("keeps a well-formed id (1-128 of [A-Za-z0-9._:-]) and echoes it in the header and the problem", async () => {
    for (const id of ["trace:7f3a.b2_c-1", "a", "x".repeat(128), "0af7651916cd43dd8448eb211c80319c"]) {
      const res = await send("/v1/admin/jobs/job_missing", { headers: { "x-request-id": id } });
      expect(res.headers.get("x-request-id"), id).toBe(id);
      expect(res.json.request_id).toBe(id);
    }
  });

  it("replaces an overlong id or one with other characters by a generated id before anything logs it", async () => {
    for (const id of ["x".repeat(129), "evil id", 'a"b', "a\\nb", "<script>", "ünïcode", "a/b", "a=b", "%0d%0a"]) {
      const res = await send("/v1/admin/jobs/job_missing", { headers: { "x-request-id": id } });
      const echoed = res.headers.get("x-request-id");
      expect(echoed, id).not.toBe(id);
      expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.json.request_id).toBe(echoed);
    }
  });

  it("generates an id when none is sent", async () => {
    const res = await send("/v1/health", { token: null });
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});
