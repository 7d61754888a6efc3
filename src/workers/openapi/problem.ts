import * as z from "zod";
import { ERROR_CODES, statusOfCode, titleOfCode, type ErrorCode } from "../../lib/errors";

const fieldError = z.object({ path: z.string(), message: z.string() });

/**
 * The problem+json body (RFC 9457) every error answers with, its `code` narrowed to the ones an
 * operation can answer at that status. Extra members (`reason`, `retry_after_ms`, …) are allowed:
 * a code may carry details of its own.
 */
export function problemSchema(codes: readonly ErrorCode[]) {
  const [first, ...rest] = codes;
  if (first === undefined) throw new Error("problemSchema needs at least one code");
  return z.looseObject({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum([first, ...rest]),
    errors: z.array(fieldError).optional(),
    request_id: z.string().optional(),
  });
}

/** Error codes grouped by the status they answer with, in the order of ERROR_CODES. */
export function codesByStatus(codes: Iterable<ErrorCode>): Map<number, ErrorCode[]> {
  const wanted = new Set(codes);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of ERROR_CODES) {
    if (!wanted.has(code)) continue;
    const status = statusOfCode(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return byStatus;
}

/** The OpenAPI description of one error status: the titles of the codes it can carry. */
export function problemDescription(codes: readonly ErrorCode[]): string {
  return codes.map((code) => `${titleOfCode(code)} (\`${code}\`)`).join("; ");
}
