import * as z from "zod";
import type { PublishedKey } from "../../../audit/keys";
import type { SealerStatus } from "../../../durable-objects/audit-sealer";
import { timestamp } from "./common";

const SIGNING_STATES = ["ok", "no_key", "invalid_key", "key_retired"] as const;

/** `GET /v1/audit/status`: the sealer's head, backlog, last checkpoint and signing key. */
export const auditStatusSchema = z.object({
  sealing: z.enum(["on", "off"]),
  head: z.object({ seq: z.number().int(), hash: z.string(), event_id: z.number().int() }),
  unsealed: z.number().int(),
  last_checkpoint: z.object({ seq: z.number().int(), hash: z.string(), at: timestamp, kid: z.string() }).nullable(),
  unsigned: z.number().int(),
  signing: z.enum(SIGNING_STATES),
  kid: z.string().nullable(),
  last_error: z.string().nullable(),
  lag_ms: z.object({ n: z.number().int(), p50: z.number().nullable(), p99: z.number().nullable(), max: z.number().nullable() }),
}) satisfies z.ZodType<SealerStatus>;

export const publishedKeySchema = z.object({
  kid: z.string(),
  alg: z.literal("Ed25519"),
  public_key_jwk: z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: z.string() }),
  from_seq: z.number().int(),
  to_seq: z.number().int().nullable(),
  not_before: timestamp,
  not_after: timestamp.nullable(),
}) satisfies z.ZodType<PublishedKey>;

/** `GET /.well-known/crewplane-audit-keys`. */
export const auditKeysSchema = z.object({ keys: z.array(publishedKeySchema) });
