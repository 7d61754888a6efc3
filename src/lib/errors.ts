import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Stable machine-readable error codes; clients branch on these, never on `detail`. */
export const ERROR_CODES = [
  "validation_failed",
  "malformed_request",
  "unauthorized",
  "forbidden",
  "not_found",
  "method_not_allowed",
  "conflict",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "security_scan",
  "prescreen_rejected",
  "not_eligible",
  "wrong_phase",
  "stale_lease",
  "result_conflict",
  "stale_proposal",
  "already_voted",
  "illegal_transition",
  "unsupported_protocol",
  "reputation_insufficient",
  "model_tier_insufficient",
  "insufficient_council_members",
  "forge_scope",
  "forge_failed",
  "already_decided",
  "approval_expired",
  "action_changed",
  "approval_consumed",
  "not_approved",
  "already_settled",
  "veto_lapsed",
  "project_active",
  "too_many_streams",
  "csrf_failed",
  "employee_retired",
  "approval_broker_unavailable",
  "unavailable",
  "internal_error",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

const codeToStatus: Record<ErrorCode, ContentfulStatusCode> = {
  validation_failed: 422,
  malformed_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  security_scan: 403,
  prescreen_rejected: 422,
  not_eligible: 403,
  wrong_phase: 409,
  stale_lease: 409,
  result_conflict: 409,
  stale_proposal: 409,
  already_voted: 409,
  illegal_transition: 409,
  unsupported_protocol: 400,
  reputation_insufficient: 403,
  model_tier_insufficient: 403,
  insufficient_council_members: 409,
  forge_scope: 403,
  forge_failed: 502,
  already_decided: 409,
  approval_expired: 409,
  action_changed: 409,
  approval_consumed: 409,
  not_approved: 409,
  already_settled: 409,
  veto_lapsed: 409,
  project_active: 409,
  too_many_streams: 429,
  csrf_failed: 403,
  employee_retired: 409,
  approval_broker_unavailable: 409,
  unavailable: 503,
  internal_error: 500,
};

const titles: Record<ErrorCode, string> = {
  validation_failed: "Validation failed",
  malformed_request: "Malformed request",
  unauthorized: "Unauthorized",
  forbidden: "Forbidden",
  not_found: "Not found",
  method_not_allowed: "Method not allowed",
  conflict: "Conflict",
  payload_too_large: "Payload too large",
  unsupported_media_type: "Unsupported media type",
  rate_limited: "Too many requests",
  security_scan: "Rejected by security scan",
  prescreen_rejected: "Rejected by prescreen",
  not_eligible: "Not eligible",
  wrong_phase: "Wrong phase",
  stale_lease: "Stale lease",
  result_conflict: "Result conflict",
  stale_proposal: "Stale proposal",
  already_voted: "Already voted",
  illegal_transition: "Illegal lifecycle transition",
  unsupported_protocol: "Unsupported protocol",
  reputation_insufficient: "Reputation insufficient",
  model_tier_insufficient: "Model tier insufficient",
  insufficient_council_members: "Insufficient council members",
  forge_scope: "Outside the forge scope",
  forge_failed: "GitHub request failed",
  already_decided: "Already decided",
  approval_expired: "Approval expired",
  action_changed: "Action changed since approval",
  approval_consumed: "Approval already used",
  not_approved: "Not approved",
  already_settled: "Task already settled",
  veto_lapsed: "Veto lapsed",
  project_active: "Project already active",
  too_many_streams: "Too many open event streams",
  csrf_failed: "Form token missing or wrong",
  employee_retired: "Employee retired",
  approval_broker_unavailable: "No human can approve",
  unavailable: "Service unavailable",
  internal_error: "Internal error",
};

/** The HTTP status a code answers with (one table, so the OpenAPI document and the answers agree). */
export function statusOfCode(code: ErrorCode): ContentfulStatusCode {
  return codeToStatus[code];
}

export function titleOfCode(code: ErrorCode): string {
  return titles[code];
}

export interface FieldError {
  path: string;
  message: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
  request_id?: string;
  [extra: string]: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: ContentfulStatusCode;
  readonly detail: string;
  readonly errors?: FieldError[];
  readonly extra?: Record<string, unknown>;
  /** Logged, never sent to the client. */
  readonly internalMessage?: string;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { errors?: FieldError[]; extra?: Record<string, unknown>; cause?: unknown; internalMessage?: string } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.status = codeToStatus[code];
    this.detail = detail;
    this.errors = options.errors;
    this.extra = options.extra;
    this.internalMessage = options.internalMessage;
  }

  toProblem(requestId?: string): Problem {
    return {
      ...this.extra,
      type: `https://crewplane.dev/problems/${this.code}`,
      title: titles[this.code],
      status: this.status,
      detail: this.detail,
      code: this.code,
      ...(this.errors ? { errors: this.errors } : {}),
      ...(requestId ? { request_id: requestId } : {}),
    };
  }
}

/** zod issues → `errors[]`, paths dotted (`acceptance_criteria.0`), root as "". */
export function fieldErrorsFromIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): FieldError[] {
  return issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message }));
}

export const notFound = (what: string) => new AppError("not_found", `${what} not found`);
