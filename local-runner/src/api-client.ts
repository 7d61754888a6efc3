/**
 * HTTP client for the Worker's runner endpoints. Every response body is parsed with zod, and
 * failures are turned into a few typed errors the poll loop can act on.
 */
import type { z } from "zod";
import { UnauthorizedError } from "./errors.ts";
import { leaseResponseSchema, MAX_FAILURE_MESSAGE, problemSchema } from "./protocol.ts";
import type { JobFailure, JobResult, LeaseRequest, LeaseResponse, Problem } from "./protocol.ts";

const REQUEST_TIMEOUT_MS = 15_000;
/** An attachment is at most 64 MiB: allow a slow uplink. */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;
/** The server holds a lease request up to wait_ms; allow that plus ordinary latency. */
const LONG_POLL_SLACK_MS = 15_000;
/** Shutdown should not hang on an unreachable Worker; an uncancelled poll only costs a lease lapse. */
const CANCEL_POLL_TIMEOUT_MS = 3_000;

/** The Worker answered with a non-2xx status (other than 401/403/409, which have their own types). */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly problem: Problem | undefined;
  constructor(status: number, message: string, problem?: Problem) {
    super(message);
    this.status = status;
    this.problem = problem;
  }
}

/** 409: the lease is no longer ours (it expired and the job was leased again). */
export class StaleLeaseError extends ApiError {
  override name = "StaleLeaseError";
}

/** The request never got an HTTP answer: connection refused, reset, DNS, request timeout. */
export class NetworkError extends Error {
  override name = "NetworkError";
}

/** A 2xx whose body does not match the protocol. */
export class InvalidResponseError extends Error {
  override name = "InvalidResponseError";
}

/** Worth retrying with backoff: the same request may succeed later. */
export function isTransient(err: unknown): boolean {
  if (err instanceof NetworkError) return true;
  if (err instanceof StaleLeaseError) return false;
  if (err instanceof ApiError) return err.status >= 500 || err.status === 429;
  return false;
}

export interface ApiClient {
  lease(request: LeaseRequest, signal?: AbortSignal): Promise<LeaseResponse>;
  /**
   * Confirms we received a claimed job and are alive to run it. Until then the Worker treats a
   * claim made by a waiting poll as provisional (its runner may have died while the poll was open).
   */
  ack(job: LeaseRef, signal?: AbortSignal): Promise<void>;
  /** Tells the Worker we abandoned a long-poll: anything it claimed for us goes back to the queue. */
  cancelPoll(pollId: string): Promise<void>;
  extend(job: LeaseRef, extendMs: number, signal?: AbortSignal): Promise<void>;
  complete(job: LeaseRef, result: JobResult, signal?: AbortSignal): Promise<void>;
  fail(job: LeaseRef, failure: JobFailure, signal?: AbortSignal): Promise<void>;
  /**
   * Uploads one file of an `attachments_archive` job under the job's lease (seed 002's attachments
   * bucket). Optional so test doubles that never run the job need not carry it.
   */
  uploadAttachment?(job: LeaseRef, file: AttachmentUpload, signal?: AbortSignal): Promise<void>;
}

export interface AttachmentUpload {
  /** The path as the packet declared it (the Worker checks it was asked for). */
  declared: string;
  /** The workspace-relative path it resolved to (the key it is stored under). */
  path: string;
  sha256: string;
  content: Uint8Array;
}

export interface LeaseRef {
  job_id: string;
  lease_id: string;
}

export interface ApiClientOptions {
  baseUrl: string;
  token: string;
  fetch?: typeof fetch;
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetch ?? fetch;

  async function post<T>(
    path: string,
    body: unknown,
    opts: { signal?: AbortSignal; timeoutMs?: number; schema?: z.ZodType<T> },
  ): Promise<T | undefined> {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? REQUEST_TIMEOUT_MS);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await fetchImpl(`${base}${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${options.token}`,
          "content-type": "application/json",
          accept: "application/json, application/problem+json",
        },
        body: JSON.stringify(body),
        signal,
      });
      text = await response.text();
    } catch (err) {
      // The caller's own abort (shutdown) is not a network problem; let it surface unchanged.
      if (opts.signal?.aborted) throw err;
      throw new NetworkError(`POST ${path} failed: ${describeFetchError(err)}`, { cause: err });
    }

    if (!response.ok) throw errorFromResponse(path, response.status, text);
    if (!opts.schema) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new InvalidResponseError(`POST ${path}: response is not JSON: ${text.slice(0, 200)}`);
    }
    const parsed = opts.schema.safeParse(json);
    if (!parsed.success) {
      throw new InvalidResponseError(`POST ${path}: unexpected response shape: ${parsed.error.message.slice(0, 500)}`);
    }
    return parsed.data;
  }

  const jobPath = (job: LeaseRef, verb: string): string => `/v1/runner/jobs/${encodeURIComponent(job.job_id)}/${verb}`;

  return {
    async lease(request, signal) {
      const response = await post("/v1/runner/lease", request, {
        signal,
        timeoutMs: request.wait_ms + LONG_POLL_SLACK_MS,
        schema: leaseResponseSchema,
      });
      return response ?? { jobs: [] };
    },
    async ack(job, signal) {
      await post(jobPath(job, "ack"), { lease_id: job.lease_id }, { signal });
    },
    async cancelPoll(pollId) {
      await post(`/v1/runner/polls/${encodeURIComponent(pollId)}/cancel`, {}, { timeoutMs: CANCEL_POLL_TIMEOUT_MS });
    },
    async extend(job, extendMs, signal) {
      await post(jobPath(job, "extend"), { lease_id: job.lease_id, extend_ms: extendMs }, { signal });
    },
    async complete(job, result, signal) {
      await post(jobPath(job, "complete"), { lease_id: job.lease_id, result }, { signal });
    },
    async fail(job, failure, signal) {
      await post(
        jobPath(job, "fail"),
        {
          lease_id: job.lease_id,
          error: {
            code: failure.code,
            message: clip(failure.message, MAX_FAILURE_MESSAGE),
            ...(failure.ran ? { ran: failure.ran } : {}),
          },
          retryable: failure.retryable,
        },
        { signal },
      );
    },
    async uploadAttachment(job, file, signal) {
      const path = `${jobPath(job, "attachments")}?${new URLSearchParams({ lease_id: job.lease_id, declared: file.declared, path: file.path })}`;
      const timeout = AbortSignal.timeout(UPLOAD_TIMEOUT_MS);
      let response: Response;
      let text: string;
      try {
        response = await fetchImpl(`${base}${path}`, {
          method: "PUT",
          headers: {
            authorization: `Bearer ${options.token}`,
            "content-type": "application/octet-stream",
            "x-content-sha256": file.sha256,
            accept: "application/json, application/problem+json",
          },
          body: file.content,
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        text = await response.text();
      } catch (err) {
        if (signal?.aborted) throw err;
        throw new NetworkError(`PUT ${path} failed: ${describeFetchError(err)}`, { cause: err });
      }
      if (!response.ok) throw errorFromResponse(path, response.status, text);
    },
  };
}

/**
 * A 404 that says the path itself is unknown (an older Worker without the endpoint), as opposed to
 * a 404 about the job. The Worker's notFound handler answers `not_found` with "No route for …".
 */
export function isRouteMissing(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404 && err.problem?.code === "not_found" && /^No route\b/.test(err.problem.detail ?? "");
}

function errorFromResponse(path: string, status: number, text: string): Error {
  let problem: Problem | undefined;
  try {
    const parsed = problemSchema.safeParse(JSON.parse(text));
    if (parsed.success) problem = parsed.data;
  } catch {
    // Not problem+json (a proxy page, an empty body): keep a snippet of the raw text instead.
  }
  const detail = problem ? [problem.code, problem.detail ?? problem.title].filter(Boolean).join(": ") : text.slice(0, 200);
  const message = `POST ${path} → ${status}${detail ? ` (${detail})` : ""}`;
  if (status === 401 || status === 403) return new UnauthorizedError(status, message);
  if (status === 409) return new StaleLeaseError(status, message, problem);
  return new ApiError(status, message, problem);
}

function describeFetchError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.name === "TimeoutError") return "request timed out";
  // undici reports "fetch failed" and hides the useful part (ECONNREFUSED …) in `cause`.
  const cause = err.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code ? `${code} ${cause.message}` : cause.message;
  }
  return err.message;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
