import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { ZodType } from "zod";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { jsonContentTypeProblem } from "../../lib/media-type";

/**
 * zValidator whose failures become the same problem+json as every other error (422
 * `validation_failed` with `errors[]`), thrown so the root onError renders them.
 *
 * A `json` target first requires a JSON Content-Type (415 `unsupported_media_type` otherwise), so
 * every JSON route refuses a form or text body before anything runs instead of seeing `{}`.
 */
export function validate<Target extends keyof ValidationTargets, Schema extends ZodType>(target: Target, schema: Schema) {
  const validator = zValidator(
    target,
    schema,
    (result) => {
      if (!result.success) {
        throw new AppError("validation_failed", `The request ${target} is invalid`, {
          errors: fieldErrorsFromIssues(result.error.issues),
        });
      }
    },
    // Synchronous parsing: no schema here refines asynchronously, and zod's async path cost a few
    // percent of a hot request's CPU (issue 26 item 5). An async refinement would throw, not pass.
    // (The option is typed with zod core's result type; classic's `safeParse` returns that object.)
    { validationFunction: (s, value) => s.safeParse(value) as never },
  );
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
