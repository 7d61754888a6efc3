import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { ZodError } from "zod";
import { AppError, fieldErrorsFromIssues, type ErrorCode } from "../lib/errors";

const statusToCode: Record<number, ErrorCode> = {
  400: "malformed_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  422: "validation_failed",
  429: "rate_limited",
};

/** Any thrown value → an AppError; unknown errors become a 500 that never echoes their message. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) {
    return new AppError("validation_failed", "The request is invalid", { errors: fieldErrorsFromIssues(err.issues) });
  }
  if (err instanceof HTTPException) {
    const code = statusToCode[err.status] ?? "internal_error";
    // Hono's validator throws 400 "Malformed JSON in request body" before zod ever runs.
    const errors = code === "malformed_request" ? [{ path: "", message: err.message }] : undefined;
    return new AppError(code, err.message || "Request failed", { errors, cause: err });
  }
  return new AppError("internal_error", "An unexpected error occurred", { cause: err });
}

export function problemResponse(c: Context, err: AppError): Response {
  const body = err.toProblem(c.get("requestId"));
  return c.body(JSON.stringify(body), err.status, { "Content-Type": "application/problem+json" });
}
