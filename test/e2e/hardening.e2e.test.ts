import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startWorker } from "./stack";

let stack: Awaited<ReturnType<typeof startWorker>>;

beforeAll(async () => {
  stack = await startWorker();
});
afterAll(async () => {
  await stack?.close();
});

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/**
 * One request over a real socket with node:http, so the Worker sees what a client on the network
 * sends: a Content-Length, or chunked transfer encoding when `chunks` is given.
 */
function raw(
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string; chunks?: string[] } = {},
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(`${stack.base}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...opts.headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null }));
    });
    // The Worker may answer 413 before it has read the whole body and close the socket under us;
    // the response is what matters, so a write error after it arrived is not a failure.
    req.on("error", (err) => (req.writableEnded ? undefined : reject(err)));
    if (opts.chunks) {
      for (const chunk of opts.chunks) req.write(chunk);
      req.end();
    } else req.end(opts.body);
  });
}

const MiB = 1024 * 1024;

describe("input hardening over real HTTP (wrangler test harness)", () => {
  it("refuses curl's default form body with 415 and keeps the config section", async () => {
    const put = await stack.api("/v1/config/runner", { method: "PUT", body: { max_attempts: 4 } });
    expect(put.status).toBe(200);
    const res = await raw("PUT", "/v1/config/runner", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "max_attempts=2",
    });
    expect(res.status).toBe(415);
    expect(res.headers["content-type"]).toBe("application/problem+json");
    expect((await stack.api("/v1/config/runner")).body.max_attempts).toBe(4);
  });

  it("answers 413 for a body over 1 MiB sent with a Content-Length", async () => {
    const res = await raw("POST", "/v1/admin/runners", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "big", pad: "x".repeat(MiB + 10) }),
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: "payload_too_large", limit_bytes: MiB });
  });

  it("answers 413 for a chunked body that passes 1 MiB in bytes, though not in characters", async () => {
    const chunk = "é".repeat(64 * 1024); // 128 KiB of UTF-8 per chunk
    const res = await raw("POST", "/v1/admin/runners", {
      headers: { "content-type": "application/json" },
      chunks: ['{"name":"chunked","pad":"', ...Array.from({ length: 10 }, () => chunk), '"}'],
    });
    expect(res.status).toBe(413);
    const runners = (await stack.api("/v1/admin/runners?limit=500")).body.runners;
    expect(runners.some((r: { name: string }) => r.name === "chunked")).toBe(false);
  });

  it("still serves a small chunked JSON body", async () => {
    const res = await raw("POST", "/v1/admin/runners", {
      headers: { "content-type": "application/json" },
      chunks: ['{"name":', '"small-chunked"}'],
    });
    expect(res.status).toBe(201);
  });

  it("answers a wrong method with 405 and Allow, and a missing token with a Bearer challenge", async () => {
    const wrong = await raw("DELETE", "/v1/health");
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe("GET, HEAD");
    const anon = await raw("GET", "/v1/events", { headers: { authorization: "" } });
    expect(anon.status).toBe(401);
    expect(anon.headers["www-authenticate"]).toBe('Bearer realm="crewplane"');
  });
});
