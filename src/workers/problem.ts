import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { ZodError } from "zod";
import { AppError, fieldErrorsFromIssues, type ErrorCode } from "../lib/errors";

const statusToCode: ReadonlyMap<number, ErrorCode> = new Map<number, ErrorCode>([
  [400, "malformed_request"],
  [401, "unauthorized"],
  [403, "forbidden"],
  [404, "not_found"],
  [405, "method_not_allowed"],
  [409, "conflict"],
  [413, "payload_too_large"],
  [415, "unsupported_media_type"],
  [422, "validation_failed"],
  [429, "rate_limited"],
]);

/** Any thrown value → an AppError; unknown errors become a 500 that never echoes their message. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) {
    return new AppError("validation_failed", "The request is invalid", { errors: fieldErrorsFromIssues(err.issues) });
  }
  if (err instanceof HTTPException) {
    const code = statusToCode.get(err.status) ?? "internal_error";
    // Hono's validator throws 400 "Malformed JSON in request body" before zod ever runs.
    const errors = code === "malformed_request" ? [{ path: "", message: err.message }] : undefined;
    return new AppError(code, err.message || "Request failed", { errors, cause: err });
  }
  return new AppError("internal_error", "An unexpected error occurred", { cause: err });
}

/**
 * The challenge every 401 carries (RFC 9110 §15.5.2, RFC 6750 §3): `error="invalid_token"` only
 * when a bearer token was presented; a request with no token, or another scheme, gets no error code.
 */
function bearerChallenge(authorization: string | undefined): string {
  const presented = /^Bearer\s+\S/i.test(authorization ?? "");
  return presented ? 'Bearer realm="crewplane", error="invalid_token"' : 'Bearer realm="crewplane"';
}

export function problemResponse(c: Context, err: AppError, headers: Record<string, string> = {}): Response {
  const body = err.toProblem(c.get("requestId"));
  const all: Record<string, string> = { ...headers, "Content-Type": "application/problem+json" };
  if (err.status === 401) all["WWW-Authenticate"] = bearerChallenge(c.req.header("authorization"));
  return c.body(JSON.stringify(body), err.status, all);
}
