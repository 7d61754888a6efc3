import { describe, expect, it } from "vitest";
import { createApiClient, InvalidResponseError, isTransient, NetworkError, StaleLeaseError } from "../../local-runner/src/api-client.ts";
import { UnauthorizedError } from "../../local-runner/src/errors.ts";

/** A fetch that answers every request with one canned response and records what it was sent. */
function cannedFetch(status: number, body: unknown, contentType = "application/json") {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetchImpl = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), init: init ?? {} });
    return new Response(typeof body === "string" ? body : JSON.stringify(body), { status, headers: { "content-type": contentType } });
  }) as typeof fetch;
  return { calls, client: createApiClient({ baseUrl: "http://worker.test/", token: "tok", fetch: fetchImpl }) };
}

const ref = { job_id: "job/1", lease_id: "lease-1" };
const problem = (status: number, code: string) => ({ type: "about:blank", title: code, status, detail: `${code} detail`, code });

describe("api client", () => {
  it("sends the bearer token and JSON body to the lease endpoint and parses the jobs", async () => {
    const job = {
      job_id: "j1",
      lease_id: "l1",
      lease_expires_at: "2026-11-29T22:40:00.000Z",
      kind: "utility",
      attempt: 1,
      payload: { runtime: "offline" },
    };
    const { calls, client } = cannedFetch(200, { jobs: [job] });
    expect(await client.lease({ capacity: 2, wait_ms: 20_000, runtimes: ["offline"], poll_id: "poll-0001" })).toEqual({ jobs: [job] });
    expect(calls[0]!.url).toBe("http://worker.test/v1/runner/lease");
    expect(new Headers(calls[0]!.init.headers).get("authorization")).toBe("Bearer tok");
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({ capacity: 2, wait_ms: 20_000, runtimes: ["offline"], poll_id: "poll-0001" });
  });

  it("rejects a lease response that does not match the protocol", async () => {
    const { client } = cannedFetch(200, { jobs: [{ job_id: "j1" }] });
    await expect(client.lease({ capacity: 1, wait_ms: 0, runtimes: ["offline"], poll_id: "poll-0001" })).rejects.toBeInstanceOf(
      InvalidResponseError,
    );
  });

  it("escapes the job id in job URLs", async () => {
    const { calls, client } = cannedFetch(200, { ok: true });
    await client.extend(ref, 30_000);
    expect(calls[0]!.url).toBe("http://worker.test/v1/runner/jobs/job%2F1/extend");
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({ lease_id: "lease-1", extend_ms: 30_000 });
  });

  it("turns 409 problem+json into StaleLeaseError with the problem details", async () => {
    const { client } = cannedFetch(409, problem(409, "stale_lease"), "application/problem+json");
    const err = await client.complete(ref, { text: "t", runtime: "offline", duration_ms: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleLeaseError);
    expect((err as StaleLeaseError).problem?.code).toBe("stale_lease");
    expect(isTransient(err)).toBe(false);
  });

  it("turns 401 and 403 into UnauthorizedError", async () => {
    for (const status of [401, 403]) {
      const { client } = cannedFetch(status, problem(status, "unauthorized"), "application/problem+json");
      await expect(client.lease({ capacity: 1, wait_ms: 0, runtimes: ["offline"], poll_id: "poll-0001" })).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
    }
  });

  it("treats 5xx and 429 as transient but not 422", async () => {
    for (const [status, transient] of [
      [500, true],
      [503, true],
      [429, true],
      [422, false],
    ] as const) {
      const { client } = cannedFetch(status, "upstream trouble", "text/plain");
      const err = await client.fail(ref, { code: "timeout", message: "m", retryable: true }).catch((e: unknown) => e);
      expect(isTransient(err), `status ${status}`).toBe(transient);
    }
  });

  it("turns connection failures into NetworkError", async () => {
    const client = createApiClient({ baseUrl: "http://127.0.0.1:9", token: "t" });
    const err = await client.lease({ capacity: 1, wait_ms: 0, runtimes: ["offline"], poll_id: "poll-0001" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(isTransient(err)).toBe(true);
  });

  it("caps failure messages at the 4000 characters the Worker stores", async () => {
    const { calls, client } = cannedFetch(200, { ok: true });
    await client.fail(ref, { code: "incomplete_output", message: "x".repeat(10_000), retryable: true });
    expect(JSON.parse(String(calls[0]!.init.body)).error.message).toHaveLength(4000);
  });

  it("sends what ran with a failure when the run said, and nothing in its place when it did not", async () => {
    const { calls, client } = cannedFetch(200, { ok: true });
    await client.fail(ref, { code: "timeout", message: "m", retryable: true, ran: { runtime: "codex", provider: "openai" } });
    await client.fail(ref, { code: "spawn_failed", message: "m", retryable: false });
    const [ran, none] = calls.map((c) => JSON.parse(String(c.init.body)));
    expect(ran.error).toEqual({ code: "timeout", message: "m", ran: { runtime: "codex", provider: "openai" } });
    expect(none.error).toEqual({ code: "spawn_failed", message: "m" });
  });
});
