import * as z from "zod";
import { REPUTATION_SOURCES } from "../../../db/schema";
import type { Beat } from "../../../nodes/events";
import type { nodeView } from "../../../nodes/registry";
import type { ledgerPage } from "../../../nodes/reputation";
import { jsonObject, timestamp } from "./common";

/** The public view of a node: nothing secret (no webhook URL or key, no credential id). */
export const nodeSchema = z.object({
  node_id: z.string(),
  name: z.string(),
  reputation: z.number(),
  model_tier: z.number().int(),
  last_heartbeat_at: timestamp.nullable(),
  last_dialog_at: timestamp.nullable(),
  council_member: z.boolean(),
  cooldown_until: timestamp.nullable(),
  webhook_verified: z.boolean(),
  suspended_at: timestamp.nullable(),
  created_at: timestamp,
}) satisfies z.ZodType<ReturnType<typeof nodeView>>;

/** `POST /v1/nodes` 200: a node calling again with its own token gets its identity back. */
export const nodeExistingSchema = nodeSchema.extend({ existing: z.literal(true) });

/** `POST /v1/nodes` 201: the secrets are shown once. */
export const nodeRegisteredSchema = z.object({
  node_id: z.string(),
  /** The bearer token the node authenticates with. */
  node_secret: z.string(),
  reputation: z.number(),
  model_tier: z.number().int(),
  /** The HMAC-SHA256 key of webhook pushes; only when a `webhook_url` was given. */
  webhook_secret: z.string().optional(),
});

export const nodeLedgerSchema = z.object({
  node_id: z.string(),
  reputation: z.number(),
  entries: z.array(
    z.object({
      id: z.string(),
      source: z.enum(REPUTATION_SOURCES),
      reference: z.string(),
      requested: z.number(),
      delta: z.number(),
      capped: z.boolean(),
      reputation_before: z.number(),
      reputation_after: z.number(),
      created_at: timestamp,
    }),
  ),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof ledgerPage>> & { node_id: string; reputation: number }>;

const pendingEventSchema = z.object({ id: z.string(), type: z.string(), payload: jsonObject, created_at: timestamp });

export const nodeHeartbeatSchema = z.object({
  node_id: z.string(),
  /** What is still pending after `ack_through`: not acknowledged and not confirmed by a push. */
  pending_events: z.array(pendingEventSchema),
  has_more: z.boolean(),
  server_time: timestamp,
  next_heartbeat_ms: z.number().int(),
}) satisfies z.ZodType<Beat & { node_id: string; server_time: string; next_heartbeat_ms: number }>;
