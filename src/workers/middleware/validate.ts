import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { ZodType } from "zod";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { jsonContentTypeProblem } from "../../lib/media-type";
import { withOperationSpec, type OperationSpec } from "../openapi/describe";
import { jsonSchemaOf, type JsonSchema } from "../openapi/json-schema";

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
  if (target !== "json") return withOperationSpec(validator, () => parametersSpec(target, schema));
  const requireJson: typeof validator = async function requireJsonBody(c, next) {
    const problem = jsonContentTypeProblem(c.req.header("content-type"));
    if (problem) {
      throw new AppError("unsupported_media_type", `This endpoint takes application/json (charset utf-8); ${problem}`, {
        extra: { accepted: ["application/json", "application/*+json"] },
      });
    }
    return validator(c, next);
  };
  return withOperationSpec(requireJson, () => ({
    requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(schema, "input") } } },
    "x-crewplane-errors": ["validation_failed", "malformed_request", "unsupported_media_type"],
  }));
}

const PARAMETER_IN: Partial<Record<keyof ValidationTargets, string>> = { param: "path", query: "query", header: "header", cookie: "cookie" };

/** A params, query, header or cookie schema as OpenAPI parameters, one per property. */
function parametersSpec(target: keyof ValidationTargets, schema: ZodType): OperationSpec {
  const where = PARAMETER_IN[target];
  if (!where) throw new Error(`validate("${target}") has no OpenAPI mapping`);
  const object = jsonSchemaOf(schema, "input");
  const required = new Set((object.required as string[] | undefined) ?? []);
  const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
  const parameters = Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === "path" || required.has(name),
      ...(typeof description === "string" ? { description } : {}),
      schema: rest,
    };
  });
  return { parameters, "x-crewplane-errors": ["validation_failed"] };
}
