import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { ZodType } from "zod";
import { AppError, fieldErrorsFromIssues } from "./errors";

/**
 * zValidator whose failures become the same problem+json as every other error (422
 * `validation_failed` with `errors[]`), thrown so the root onError renders them.
 */
export function validate<Target extends keyof ValidationTargets, Schema extends ZodType>(target: Target, schema: Schema) {
  return zValidator(target, schema, (result) => {
    if (!result.success) {
      throw new AppError("validation_failed", `The request ${target} is invalid`, {
        errors: fieldErrorsFromIssues(result.error.issues),
      });
    }
  });
}
