import type { Context, MiddlewareHandler } from "hono";
import * as z from "zod";
import type { ZodType } from "zod";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { jsonContentTypeProblem } from "../../lib/media-type";
import { envelopeSchema, flatBody } from "../../a2a/envelope";
import { withOperationSpec } from "../openapi/describe";
import { jsonSchemaOf } from "../openapi/json-schema";

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

/** Does nothing at request time: the route's handler reads its body itself (`a2aBody`, `readJson`). */
const passThrough = (): MiddlewareHandler =>
  async function a2aBodyDoc(_c, next) {
    await next();
  };

/**
 * What every facade body can be refused for: not JSON (415, 400), an envelope of another protocol
 * or major version (400 `unsupported_protocol`), fields missing or malformed (422); a payload over
 * 64 KiB of JSON is a 413 (the document adds `payload_too_large` to every body).
 */
const BODY_ERRORS = ["validation_failed", "malformed_request", "unsupported_media_type", "unsupported_protocol"] as const;

/**
 * The request body of a facade route whose handler reads it with `a2aBody(c, schema)`: the fields
 * flat, or a gep-a2a envelope whose `payload` holds them (its `sender_id` becomes the body's). Keys
 * the schema does not know are ignored, as EvoMap's protocol has it. Documentation only.
 */
export function a2aJsonDoc(schema: ZodType): MiddlewareHandler {
  return withOperationSpec(passThrough(), () => {
    const body = z.union([
      schema.describe("The fields, flat"),
      envelopeSchema
        .extend({ payload: schema })
        .describe("A gep-a2a envelope (any `message_type`) whose payload holds the fields; its `sender_id` is the request's `sender_id`"),
    ]);
    return {
      requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(body, "input") } } },
      "x-crewplane-errors": [...BODY_ERRORS],
    };
  });
}

/**
 * The request body of a protocol message that only comes enveloped (`hello`): a gep-a2a envelope of
 * `messageType` whose payload is `payload`, with any `extra` members beside the seven. Documentation only.
 */
export function a2aEnvelopeDoc(messageType: string, payload: ZodType, extra: z.ZodRawShape = {}): MiddlewareHandler {
  return withOperationSpec(passThrough(), () => {
    const body = envelopeSchema.extend({ message_type: z.literal(messageType), payload, ...extra });
    return {
      requestBody: { required: true, content: { "application/json": { schema: jsonSchemaOf(body, "input") } } },
      "x-crewplane-errors": [...BODY_ERRORS],
    };
  });
}
