import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import { z, type ZodType } from "zod";
import { AppError, fieldErrorsFromIssues } from "./errors";
import { jsonContentTypeProblem } from "./media-type";

/**
 * zValidator whose failures become the same problem+json as every other error (422
 * `validation_failed` with `errors[]`), thrown so the root onError renders them.
 *
 * A `json` target first requires a JSON Content-Type (415 `unsupported_media_type` otherwise), so
 * every JSON route refuses a form or text body before anything runs instead of seeing `{}`.
 */
export function validate<Target extends keyof ValidationTargets, Schema extends ZodType>(target: Target, schema: Schema) {
  const validator = zValidator(target, schema, (result) => {
    if (!result.success) {
      throw new AppError("validation_failed", `The request ${target} is invalid`, {
        errors: fieldErrorsFromIssues(result.error.issues),
      });
    }
  });
  if (target !== "json") return validator;
  const requireJson: typeof validator = async function requireJsonBody(c, next) {
    const problem = jsonContentTypeProblem(c.req.header("content-type"));
    if (problem) {
      throw new AppError("unsupported_media_type", `This endpoint takes application/json (charset utf-8); ${problem}`, {
        extra: { accepted: ["application/json", "application/*+json"] },
      });
    }
    return validator(c, next);
  };
  return requireJson;
}

// C0/C1 controls, bidi embeddings/overrides/isolates, and line/paragraph separators: they can make a
// name render as something else in a log, a console or a commit trailer.
const UNSAFE_LABEL_CHARS = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
// The same for multi-line text, where tab, newline and carriage return are allowed.
const UNSAFE_PROSE_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;

function safeText(max: number, unsafe: RegExp) {
  return z
    .string()
    .trim()
    .min(1)
    .max(max)
    .superRefine((value, ctx) => {
      if (!value.isWellFormed()) ctx.addIssue({ code: "custom", message: "must not contain lone surrogates" });
      else if (unsafe.test(value)) ctx.addIssue({ code: "custom", message: "must not contain control characters or bidi overrides" });
    });
}

/**
 * A short human-readable label (a name, a title, a tag): trimmed, 1..max UTF-16 units, and free of
 * control characters, bidi overrides and lone surrogates. Use it for every name-like field.
 */
export function label(max = 100) {
  return safeText(max, UNSAFE_LABEL_CHARS);
}

/**
 * Free text that others read (a proposal, a dialog, a packet's objective): like `label` but line
 * breaks and tabs are allowed; other controls, bidi overrides and lone surrogates are not (they can
 * disguise what a reader sees).
 */
export function prose(max: number) {
  return safeText(max, UNSAFE_PROSE_CHARS);
}
