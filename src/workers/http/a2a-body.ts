import type { Context } from "hono";
import type { z, ZodType } from "zod";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { jsonContentTypeProblem } from "../../lib/media-type";
import { flatBody } from "../../a2a/envelope";

/** The JSON body of a facade request (415 without a JSON type, 400 when it does not parse). */
export async function readJson(c: Context): Promise<unknown> {
  const problem = jsonContentTypeProblem(c.req.header("content-type"));
  if (problem) {
    throw new AppError("unsupported_media_type", `This endpoint takes application/json (charset utf-8); ${problem}`, {
      extra: { accepted: ["application/json", "application/*+json"] },
    });
  }
  try {
    return JSON.parse(await c.req.text());
  } catch {
    throw new AppError("malformed_request", "The request body is not JSON", { errors: [{ path: "", message: "not JSON" }] });
  }
}

/** A facade route's fields, sent flat or wrapped in a gep-a2a envelope, validated by `schema` (422 otherwise). */
export async function a2aBody<S extends ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const parsed = schema.safeParse(flatBody(await readJson(c)));
  if (!parsed.success)
    throw new AppError("validation_failed", "The request json is invalid", { errors: fieldErrorsFromIssues(parsed.error.issues) });
  return parsed.data;
}
