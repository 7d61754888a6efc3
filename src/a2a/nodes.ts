import { z } from "zod";
import type { Db } from "../db/client";
import { isUniqueFailure } from "../db/guard";
import type { Env } from "../env";
import { authenticate } from "../lib/auth";
import { AppError } from "../lib/errors";
import { newId } from "../lib/ids";
import { label } from "../lib/validation";
import { heartbeat, pendingEvents } from "../nodes/events";
import { findNode, getNode, registerNode, webhookUrl } from "../nodes/registry";
import type { Envelope } from "./envelope";
import { modelTier } from "./tiers";

/** How often a node should call in (also `/v1`'s `next_heartbeat_ms`). */
export const A2A_HEARTBEAT_MS = 60_000;
const OUR_NODE_ID = /^node_[0-9a-f]{16}$/;

/**
 * The `hello` payload. EvoMap's protocol grows fields over time and its clients send them all
 * (gene counts, fingerprints, constitutions), so unknown payload fields are ignored here rather
 * than refused; the ones crewplane uses are validated.
 */
export function helloPayload(production: boolean) {
  return z.object({
    model: z.string().trim().max(200).optional(),
    name: label(100).optional(),
    webhook_url: webhookUrl(production).optional(),
    identity_doc: z.string().max(8_000).optional(),
    referrer: z.string().max(128).optional(),
    env_fingerprint: z.record(z.string(), z.unknown()).optional(),
  });
}

/** The bearer token of a request, if it sent one. */
export function bearerOf(header: string | undefined): string | undefined | null {
  if (header === undefined) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null;
}

/**
 * `POST /a2a/hello`: registration onto the same node registry `/v1/nodes` uses.
 *
 * - With `Authorization: Bearer <node_secret>`: that node, as it is (200), never a new identity;
 *   the envelope's `sender_id` must be that node's id.
 * - Without: a `sender_id` that is already a node is refused (401: its secret is needed); a new one
 *   in crewplane's own form (`node_` + 16 hex, which is also the form EvoMap clients generate) is
 *   kept, anything else gets a hub-assigned id (`node_id_assigned_by_hub: true`). The model string
 *   sets the tier (src/a2a/tiers.ts); new nodes start at the council's `initial_reputation`.
 */
export async function hello(
  env: Env,
  db: Db,
  envelope: Envelope,
  token: string | undefined | null,
  now: Date,
  opts: { initialReputation: number; production: boolean },
) {
  const parsed = helloPayload(opts.production).safeParse(envelope.payload);
  if (!parsed.success) {
    throw new AppError("validation_failed", "The hello payload is invalid", {
      errors: parsed.error.issues.map((i) => ({ path: ["payload", ...i.path.map(String)].join("."), message: i.message })),
    });
  }
  const payload = parsed.data;
  if (token !== undefined) {
    const principal = token ? await authenticate(env, token, now) : null;
    if (!principal || principal.kind !== "node") throw new AppError("unauthorized", "The bearer token is not a live node secret");
    if (principal.nodeId !== envelope.sender_id) throw new AppError("forbidden", "sender_id is not the node this secret belongs to");
    const node = await getNode(db, principal.nodeId);
    return {
      status: 200 as const,
      body: {
        status: "acknowledged",
        node_id: node.id,
        your_node_id: node.id,
        node_id_assigned_by_hub: false,
        node_secret_status: "active",
        model_tier: node.modelTier,
        reputation: node.reputation,
        heartbeat_interval_ms: A2A_HEARTBEAT_MS,
      },
    };
  }
  if (await findNode(db, envelope.sender_id)) {
    throw new AppError("unauthorized", "This node id is registered: say hello with its node_secret (Authorization: Bearer)");
  }
  const id = OUR_NODE_ID.test(envelope.sender_id) ? envelope.sender_id : newId("node");
  const tier = modelTier(payload.model);
  let reg;
  try {
    reg = await registerNode(
      db,
      {
        name: payload.name ?? envelope.sender_id.slice(0, 100),
        model_tier: tier.tier,
        ...(payload.webhook_url ? { webhook_url: payload.webhook_url } : {}),
      },
      opts.initialReputation,
      now,
      { id, detail: { via: "a2a", sender_id: envelope.sender_id, model: payload.model ?? null, model_tier_label: tier.label } },
    );
  } catch (err) {
    // Two hellos raced for the same sender_id: the first one is that node now.
    if (isUniqueFailure(err, "nodes")) throw new AppError("unauthorized", "This node id is registered: say hello with its node_secret");
    throw err;
  }
  return {
    status: 201 as const,
    body: {
      status: "acknowledged",
      node_id: reg.node.id,
      your_node_id: reg.node.id,
      node_id_assigned_by_hub: reg.node.id !== envelope.sender_id,
      node_secret: reg.node_secret,
      node_secret_note: "Send it as Authorization: Bearer <node_secret> on every later request; it is shown once.",
      model_tier: tier.tier,
      model_tier_label: tier.label,
      reputation: reg.node.reputation,
      heartbeat_interval_ms: A2A_HEARTBEAT_MS,
      ...(reg.webhook_secret ? { webhook_secret: reg.webhook_secret } : {}),
    },
  };
}

/** `POST /a2a/heartbeat` body: EvoMap's flat heartbeat (its extra statistics are ignored) and our `ack_through`. */
export const heartbeatBody = z
  .object({
    node_id: z.string().max(128).optional(),
    sender_id: z.string().max(128).optional(),
    ack_through: z.union([z.string().regex(/^\d{1,15}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)]).optional(),
  })
  .refine((b) => b.node_id !== undefined || b.sender_id !== undefined, {
    message: "name the node (node_id or sender_id)",
    path: ["node_id"],
  });

/**
 * `POST /a2a/heartbeat`: the `/v1` heartbeat (pending events until acknowledged with `ack_through`,
 * at least once) in EvoMap's shape. Without a valid secret an unknown node id gets `unknown_node`
 * (so an EvoMap client says hello again); a known one needs its secret.
 */
export async function a2aHeartbeat(env: Env, db: Db, body: z.infer<typeof heartbeatBody>, token: string | undefined | null, now: Date) {
  const nodeId = (body.node_id ?? body.sender_id)!;
  if (body.node_id && body.sender_id && body.node_id !== body.sender_id)
    throw new AppError("forbidden", "node_id and sender_id name different nodes");
  const principal = token ? await authenticate(env, token, now) : null;
  if (!principal) {
    if (!(await findNode(db, nodeId))) {
      return {
        status: "unknown_node",
        node_id: nodeId,
        next_heartbeat_ms: A2A_HEARTBEAT_MS,
        has_pending_events: false,
        pending_events: [],
        server_time: now.toISOString(),
      };
    }
    throw new AppError("unauthorized", token === undefined ? "A bearer token is required" : "The bearer token is not valid");
  }
  if (principal.kind !== "node" || principal.nodeId !== nodeId) throw new AppError("forbidden", "A node heartbeats for itself only");
  const beat = await heartbeat(db, nodeId, body.ack_through === undefined ? undefined : Number(body.ack_through), now);
  return {
    status: "ok",
    node_id: nodeId,
    next_heartbeat_ms: A2A_HEARTBEAT_MS,
    has_pending_events: beat.pending_events.length > 0,
    pending_events: beat.pending_events,
    has_more: beat.has_more,
    server_time: now.toISOString(),
  };
}

export const pollBody = z.strictObject({
  node_id: z.string().max(128).optional(),
  sender_id: z.string().max(128).optional(),
  timeout_ms: z.number().int().min(0).max(25_000).default(0),
  ack_through: z.union([z.string().regex(/^\d{1,15}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)]).optional(),
});

/**
 * `POST /a2a/events/poll`: heartbeats (and applies `ack_through`, as on `/v1`) once, then waits up to
 * `timeout_ms` (≤ 25 s, real time: it bounds a request) for a pending event, re-reading only.
 */
export async function pollEvents(
  db: Db,
  nodeId: string,
  body: z.infer<typeof pollBody>,
  now: Date,
  sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
) {
  const deadline = Date.now() + body.timeout_ms;
  let beat = await heartbeat(db, nodeId, body.ack_through === undefined ? undefined : Number(body.ack_through), now);
  for (;;) {
    if (beat.pending_events.length > 0 || Date.now() >= deadline) {
      return { node_id: nodeId, events: beat.pending_events, has_pending_events: beat.pending_events.length > 0, has_more: beat.has_more };
    }
    await sleep(Math.min(500, Math.max(0, deadline - Date.now())));
    beat = await pendingEvents(db, nodeId);
  }
}
