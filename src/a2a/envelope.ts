import * as z from "zod";
import { AppError, fieldErrorsFromIssues } from "../lib/errors";

/**
 * The gep-a2a envelope (EvoMap's node protocol): every protocol message is
 *
 *     {protocol: "gep-a2a", protocol_version: "1.0.0", message_type, message_id, sender_id, timestamp, payload}
 *
 * Problems the facade answers (README "The /a2a facade"), checked in this order:
 * - not a JSON object, or a field missing or malformed → `422 validation_failed`, `errors[].path` per field;
 *   keys beside the seven are ignored (EvoMap's proxy sends `env_fingerprint` there), as are unknown
 *   payload keys (its clients grow them release by release);
 * - `protocol` other than `gep-a2a`, or a `protocol_version` whose major is not 1 → `400 unsupported_protocol`;
 * - `message_type` other than the route's (`hello` on `/a2a/hello`) → `422 validation_failed` naming it;
 * - a payload over 64 KiB of JSON → `413 payload_too_large` (`limit_bytes`); the whole body is capped
 *   at 1 MiB before anything is parsed, like every request.
 */
export const A2A_PROTOCOL = "gep-a2a";
export const A2A_PROTOCOL_VERSION = "1.0.0";
export const MAX_PAYLOAD_BYTES = 65_536;

const token = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9._:-]+$/, "letters, digits, '.', '_', ':' or '-'");

export const envelopeSchema = z.object({
  protocol: z.literal(A2A_PROTOCOL),
  protocol_version: z.string().regex(/^1\.\d{1,4}\.\d{1,4}$/, "a 1.x.y version"),
  message_type: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, "a lower_snake_case message type"),
  message_id: token(128),
  sender_id: token(128),
  timestamp: z.iso.datetime({ offset: true }),
  payload: z.record(z.string(), z.unknown()),
});
export type Envelope = z.infer<typeof envelopeSchema>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A body that carries `protocol` is an envelope (a client that wraps every message). */
export function isEnveloped(raw: unknown): boolean {
  return isObject(raw) && "protocol" in raw;
}

/** Validates an envelope; `messageType` is the route's, when it has one. */
export function readEnvelope(raw: unknown, messageType?: string): Envelope {
  if (!isObject(raw)) {
    throw new AppError("validation_failed", "The body must be a gep-a2a envelope object", {
      errors: [
        { path: "", message: "must be an object with protocol, protocol_version, message_type, message_id, sender_id, timestamp, payload" },
      ],
    });
  }
  if (typeof raw.protocol === "string" && raw.protocol !== A2A_PROTOCOL) {
    throw new AppError("unsupported_protocol", `This hub speaks ${A2A_PROTOCOL}, not '${raw.protocol.slice(0, 40)}'`, {
      extra: { supported_protocol: A2A_PROTOCOL, supported_versions: "1.x.y" },
    });
  }
  const major = typeof raw.protocol_version === "string" ? /^(\d+)\.\d+\.\d+$/.exec(raw.protocol_version)?.[1] : undefined;
  if (major !== undefined && major !== "1") {
    throw new AppError(
      "unsupported_protocol",
      `This hub speaks ${A2A_PROTOCOL} 1.x.y, not version '${String(raw.protocol_version).slice(0, 20)}'`,
      {
        extra: { supported_protocol: A2A_PROTOCOL, supported_versions: "1.x.y" },
      },
    );
  }
  const parsed = envelopeSchema.safeParse(raw);
  if (!parsed.success) {
    throw new AppError("validation_failed", "The gep-a2a envelope is invalid", { errors: fieldErrorsFromIssues(parsed.error.issues) });
  }
  if (messageType && parsed.data.message_type !== messageType) {
    throw new AppError("validation_failed", `This endpoint takes message_type '${messageType}'`, {
      errors: [{ path: "message_type", message: `must be '${messageType}'` }],
    });
  }
  const bytes = new TextEncoder().encode(JSON.stringify(parsed.data.payload)).byteLength;
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new AppError("payload_too_large", `The envelope's payload is ${bytes} bytes of JSON, over ${MAX_PAYLOAD_BYTES}`, {
      extra: { limit_bytes: MAX_PAYLOAD_BYTES },
      errors: [{ path: "payload", message: `at most ${MAX_PAYLOAD_BYTES} bytes of JSON` }],
    });
  }
  return parsed.data;
}

/**
 * The REST-style facade routes take their fields flat (`{sender_id, …}`); a client that wraps every
 * message gets the same: the payload's fields, with the envelope's `sender_id`.
 */
export function flatBody(raw: unknown): unknown {
  if (!isEnveloped(raw)) return raw;
  const env = readEnvelope(raw);
  return { ...env.payload, sender_id: env.sender_id };
}
