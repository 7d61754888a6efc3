/**
 * A small stand-in for the Worker's runner endpoints (API.md "Runner protocol"), on 127.0.0.1
 * with an ephemeral port. It records every request so tests can assert what the runner sent.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor } from "./processes.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

export interface QueuedJob {
  job_id: string;
  kind: string;
  attempt: number;
  payload: unknown;
  /** Lease length granted at lease time. */
  leaseMs: number;
}

type Reply = { status: number; body?: unknown } | undefined;
export type Verb = "lease" | "ack" | "extend" | "complete" | "fail";
/** Return a reply to override the default for one request, or undefined for the default. */
export type Override = (req: RecordedRequest) => Reply;

export interface FakeRunnerServer {
  url: string;
  token: string;
  requests: RecordedRequest[];
  /** Queue a job; it is handed out by the next lease call. */
  enqueue(job: Partial<QueuedJob> & { payload: unknown }): QueuedJob & { lease_id: () => string | undefined };
  override: Override | undefined;
  /** Sent in every lease response as `settings` when set (like the Worker's runner settings). */
  settings: Record<string, unknown> | undefined;
  /** Answer ack with "No route" 404, as a Worker from before the ack endpoint does. */
  withoutAck: boolean;
  requestsTo(verb: Verb, jobId?: string): RecordedRequest[];
  waitForRequest(verb: Verb, jobId?: string, timeoutMs?: number): Promise<RecordedRequest>;
  close(): Promise<void>;
}

/**
 * `forwardTo`: requests outside the runner protocol (a member's MCP server calling the team API with
 * its member token) are passed to that base URL, so one URL serves a runner and its members.
 */
export async function startFakeServer(options: { token?: string; forwardTo?: string } = {}): Promise<FakeRunnerServer> {
  const token = options.token ?? `runner-token-${randomUUID()}`;
  const requests: RecordedRequest[] = [];
  const queue: QueuedJob[] = [];
  const leases = new Map<string, string>();
  const waiters = new Set<() => void>();

  const server = createServer((req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      authorization: req.headers.authorization,
      body: text ? JSON.parse(text) : undefined,
    };
    if (options.forwardTo && !recorded.path.startsWith("/v1/runner/")) {
      const forwarded = await fetch(new URL(recorded.path, options.forwardTo), {
        method: recorded.method,
        headers: {
          ...(recorded.authorization ? { authorization: recorded.authorization } : {}),
          ...(text ? { "content-type": "application/json" } : {}),
        },
        ...(text ? { body: text } : {}),
      }).catch(() => undefined);
      if (!forwarded) return problem(res, 502, "bad_gateway", "the team API stand-in is not reachable");
      res.writeHead(forwarded.status, { "content-type": forwarded.headers.get("content-type") ?? "application/json" });
      res.end(await forwarded.text());
      return;
    }
    requests.push(recorded);

    if (recorded.authorization !== `Bearer ${token}`) return problem(res, 401, "unauthorized", "invalid runner token");
    const custom = fake.override?.(recorded);
    if (custom) return send(res, custom.status, custom.body);

    if (recorded.path === "/v1/runner/lease") return lease(recorded, res);
    if (/^\/v1\/runner\/polls\/[^/]+\/cancel$/.test(recorded.path)) return send(res, 200, { released: 0 });
    const match = /^\/v1\/runner\/jobs\/([^/]+)\/(ack|extend|complete|fail)$/.exec(recorded.path);
    const noRoute = `No route for ${recorded.method} ${recorded.path}`;
    if (!match || (match[2] === "ack" && fake.withoutAck)) return problem(res, 404, "not_found", noRoute);
    const jobId = decodeURIComponent(match[1]!);
    if (!leases.has(jobId)) return problem(res, 404, "not_found", `job ${jobId} not found`);
    if (leases.get(jobId) !== recorded.body?.lease_id) return problem(res, 409, "stale_lease", "stale lease");
    if (match[2] === "ack") return send(res, 200, { job_id: jobId, lease_expires_at: new Date(Date.now() + 30_000).toISOString() });
    return send(res, 200, { ok: true });
  }

  function lease(recorded: RecordedRequest, res: ServerResponse): void {
    const capacity: number = recorded.body.capacity;
    const waitMs: number = recorded.body.wait_ms ?? 0;
    const take = (): void => {
      const jobs = queue.splice(0, capacity).map((job) => {
        const leaseId = `lease-${randomUUID()}`;
        leases.set(job.job_id, leaseId);
        return {
          job_id: job.job_id,
          lease_id: leaseId,
          lease_expires_at: new Date(Date.now() + job.leaseMs).toISOString(),
          kind: job.kind,
          attempt: job.attempt,
          payload: job.payload,
        };
      });
      send(res, 200, { jobs, ...(fake.settings ? { settings: fake.settings } : {}) });
    };
    if (queue.length > 0) return take();
    // Long-poll: hold the request until a job is queued, wait_ms passes or the runner hangs up.
    const timer = setTimeout(done, waitMs);
    waiters.add(done);
    res.once("close", () => {
      clearTimeout(timer);
      waiters.delete(done);
    });
    function done(): void {
      clearTimeout(timer);
      waiters.delete(done);
      if (!res.writableEnded && !res.destroyed) take();
    }
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const isProblem = status >= 400;
    res.writeHead(status, { "content-type": isProblem ? "application/problem+json" : "application/json" });
    res.end(body === undefined ? "" : JSON.stringify(body));
  }

  function problem(res: ServerResponse, status: number, code: string, detail: string): void {
    send(res, status, { type: "about:blank", title: code, status, detail, code });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const verbOf = (r: RecordedRequest): string => (r.path === "/v1/runner/lease" ? "lease" : (r.path.split("/").pop() ?? ""));
  const jobOf = (r: RecordedRequest): string | undefined => /^\/v1\/runner\/jobs\/([^/]+)\//.exec(r.path)?.[1];

  const fake: FakeRunnerServer = {
    url: `http://127.0.0.1:${port}`,
    token,
    requests,
    override: undefined,
    settings: undefined,
    withoutAck: false,
    enqueue(job) {
      const queued: QueuedJob = {
        job_id: job.job_id ?? `job-${randomUUID()}`,
        kind: job.kind ?? "utility",
        attempt: job.attempt ?? 1,
        payload: job.payload,
        leaseMs: job.leaseMs ?? 30_000,
      };
      queue.push(queued);
      for (const wake of [...waiters]) wake();
      return { ...queued, lease_id: () => leases.get(queued.job_id) };
    },
    requestsTo(verb, jobId) {
      return requests.filter((r) => verbOf(r) === verb && (jobId === undefined || jobOf(r) === encodeURIComponent(jobId)));
    },
    waitForRequest(verb, jobId, timeoutMs = 20_000) {
      return waitFor(() => fake.requestsTo(verb, jobId)[0], `a ${verb} request${jobId ? ` for ${jobId}` : ""}`, timeoutMs);
    },
    close() {
      for (const wake of [...waiters]) wake();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
