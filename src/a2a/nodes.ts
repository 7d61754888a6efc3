import * as z from "zod";
import type { Db } from "../db/client";
import { isUniqueFailure } from "../db/guard";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { label } from "../lib/validation";
import { heartbeat, pendingEvents, takePendingEvents, type Beat } from "../nodes/events";
import { nodePresence, type PresenceRecorder } from "../nodes/presence-store";
import { findNode, NODE_ID_PATTERN, registerNode, webhookUrl, type NodeRow } from "../nodes/registry";
import { rotateNodeSecret } from "../nodes/secrets";
import type { ProjectsConfig } from "../projects/config";
import { authenticateA2a, authProblem } from "./auth";
import type { Envelope } from "./envelope";
import { claimableTasks } from "./tasks";
import { modelTier } from "./tiers";

/** How often a node should call in (also `/v1`'s `next_heartbeat_ms`). */
export const A2A_HEARTBEAT_MS = 60_000;

/**
 * The facade's rates, each a sliding window in a `RateWindow` object (atomic under contention):
 * new nodes per source address (a client that loses its secret and says hello in a loop cannot fill
 * the node table), and heartbeats per node (twice the pace `next_heartbeat_ms` asks for, with room).
 */
export const A2A_LIMITS = {
  registrations: { limit: 10, windowMs: 3_600_000 },
  heartbeats: { limit: 30, windowMs: 600_000 },
} as const;

/** Takes one hit of a window (`key`), or says how long until there is room. */
export type Admit = (
  key: string,
  rule: { limit: number; windowMs: number },
  token: string,
) => Promise<{ ok: true } | { ok: false; retry_after_ms: number }>;

const optionalText = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .nullish()
    .transform((v) => v || undefined);

/**
 * The `hello` payload. EvoMap's protocol grows fields over time and its clients send them all
 * (gene counts, fingerprints, capabilities), so unknown payload fields are ignored here rather
 * than refused; the ones crewplane uses are validated.
 */
export function helloPayload(production: boolean) {
  return z.object({
    model: optionalText(200),
    name: label(100).nullish(),
    webhook_url: webhookUrl(production).optional(),
    identity_doc: z.string().max(8_000).nullish(),
    referrer: z.string().max(128).nullish(),
    env_fingerprint: z.record(z.string(), z.unknown()).nullish(),
    rotate_secret: z.boolean().nullish(),
  });
}

/** The model a node runs on: `payload.model`, else its environment fingerprint's (where EvoMap's client puts it). */
export function helloModel(
  payload: { model?: string | undefined; env_fingerprint?: Record<string, unknown> | null | undefined },
  topFingerprint?: unknown,
) {
  const fromFingerprint = (fp: unknown) => {
    const model = typeof fp === "object" && fp !== null ? (fp as Record<string, unknown>).model : undefined;
    return typeof model === "string" && model.trim() ? model.trim().slice(0, 200) : undefined;
  };
  return payload.model ?? fromFingerprint(payload.env_fingerprint) ?? fromFingerprint(topFingerprint);
}

/** The bearer token of a request, if it sent one. */
export function bearerOf(header: string | undefined): string | undefined | null {
  if (header === undefined) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null;
}

/** EvoMap's answer to a hello, at the top level and again in `payload` (where its clients read the secret). */
function acknowledged(node: NodeRow, fields: Record<string, unknown>) {
  const tier = { model_tier: node.modelTier, reputation: node.reputation, heartbeat_interval_ms: A2A_HEARTBEAT_MS };
  const body = { status: "acknowledged", node_id: node.id, your_node_id: node.id, node_id_assigned_by_hub: false, ...tier, ...fields };
  return { ...body, payload: body };
}

/**
 * `POST /a2a/hello`: registration onto the same node registry `/v1/nodes` uses. The node keeps the id
 * its client chose (`sender_id`, `node_` + 12 to 32 hex).
 *
 * - A new id: registered (201) with its secret (64 hex, stored hashed), tier from the model it reports;
 *   at most `A2A_LIMITS.registrations` new nodes per source address (`429` with Retry-After).
 * - An existing id with its secret as Bearer: that node (200), never a new identity; `rotate_secret`
 *   gives it a new secret and retires the old one. Without the secret: refused (`401`,
 *   `reason: node_id_already_claimed`), nothing created. Of racing first hellos for one id, one
 *   registers and the others are refused the same way.
 */
export async function hello(
  env: Env,
  db: Db,
  message: { envelope: Envelope; topFingerprint?: unknown },
  token: string | undefined | null,
  now: Date,
  opts: { initialReputation: number; production: boolean; source: string; admit: Admit },
) {
  const { envelope } = message;
  const parsed = helloPayload(opts.production).safeParse(envelope.payload);
  if (!parsed.success) {
    throw new AppError("validation_failed", "The hello payload is invalid", {
      errors: parsed.error.issues.map((i) => ({ path: ["payload", ...i.path.map(String)].join("."), message: i.message })),
    });
  }
  const payload = parsed.data;
  const nodeId = envelope.sender_id;
  if (!NODE_ID_PATTERN.test(nodeId)) {
    throw new AppError("validation_failed", "sender_id is the node's own id: node_ + 12 to 32 lowercase hex", {
      errors: [{ path: "sender_id", message: "a node id (node_ + 12 to 32 lowercase hex), kept for the node's life" }],
    });
  }

  if (await findNode(db, nodeId)) {
    if (!token) throw claimed();
    const auth = await authenticateA2a(env, db, token, nodeId, now);
    if (!auth.ok) throw auth.reason === "unknown_node" ? claimed() : authProblem(auth.reason);
    if (!payload.rotate_secret)
      return { status: 200 as const, body: acknowledged(auth.node, { node_secret_status: "active", ...suspension(auth.node) }) };
    const rotated = await rotateNodeSecret(db, auth.node, now, "a2a");
    if (!rotated) {
      throw new AppError("conflict", "Another hello rotated this node's secret at the same moment; that one is the secret now", {
        extra: { reason: "secret_rotated_concurrently" },
      });
    }
    return {
      status: 200 as const,
      body: acknowledged(auth.node, {
        node_secret: rotated.secret,
        node_secret_status: "rotated",
        v1_token: rotated.token,
        ...suspension(auth.node),
      }),
    };
  }

  // A new node. A bearer sent with it is a secret from elsewhere (another hub, a wiped database): ignored.
  const admitted = await opts.admit(`a2a-register:${opts.source}`, A2A_LIMITS.registrations, nodeId);
  if (!admitted.ok) {
    throw new AppError("rate_limited", "Too many new nodes from this address; try again later", {
      extra: { reason: "registration_rate", retry_after_ms: admitted.retry_after_ms, limit: A2A_LIMITS.registrations.limit },
    });
  }
  const model = helloModel(payload, message.topFingerprint);
  const tier = modelTier(model);
  let reg;
  try {
    reg = await registerNode(
      db,
      {
        name: payload.name ?? nodeId,
        model_tier: tier.tier,
        ...(payload.webhook_url ? { webhook_url: payload.webhook_url } : {}),
      },
      opts.initialReputation,
      now,
      { id: nodeId, detail: { via: "a2a", sender_id: nodeId, model: model ?? null, model_tier_label: tier.label } },
    );
  } catch (err) {
    // Two hellos raced for the same new id: the first one is that node now, and this one holds no secret.
    if (isUniqueFailure(err, "nodes")) throw claimed();
    throw err;
  }
  return {
    status: 201 as const,
    body: acknowledged(reg.node, {
      node_secret: reg.secret,
      node_secret_note: "Send it as Authorization: Bearer <node_secret> on every later request, naming your node_id; it is shown once.",
      // The same secret as crewplane's own node token, for the /v1 API.
      v1_token: reg.node_secret,
      model_tier_label: tier.label,
      ...(reg.webhook_secret ? { webhook_secret: reg.webhook_secret } : {}),
    }),
  };
}

const claimed = () =>
  new AppError("unauthorized", "This node id is registered: say hello with its node_secret (Authorization: Bearer)", {
    extra: { reason: "node_id_already_claimed" },
  });

const suspension = (node: NodeRow) => (node.suspendedAt ? { suspended: true, suspended_at: node.suspendedAt } : {});

const ackThrough = z.union([z.string().regex(/^\d{1,15}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)]);

/** `POST /a2a/heartbeat` body: EvoMap's flat heartbeat (its extra statistics are ignored) and our `ack_through`. */
export const heartbeatBody = z
  .object({
    node_id: z.string().max(128).optional(),
    sender_id: z.string().max(128).optional(),
    ack_through: ackThrough.optional(),
  })
  .refine((b) => b.node_id !== undefined || b.sender_id !== undefined, {
    message: "name the node (node_id or sender_id)",
    path: ["node_id"],
  });

function beatAnswer(
  status: "ok" | "unknown_node" | "suspended" | "rate_limited",
  nodeId: string,
  now: Date,
  extra: Record<string, unknown> = {},
) {
  return {
    status,
    node_id: nodeId,
    next_heartbeat_ms: A2A_HEARTBEAT_MS,
    has_pending_events: false,
    pending_events: [] as Beat["pending_events"],
    available_work: [] as Awaited<ReturnType<typeof claimableTasks>>,
    server_time: now.toISOString(),
    ...extra,
  };
}

/**
 * `POST /a2a/heartbeat`: the `/v1` heartbeat (pending events until acknowledged with `ack_through`, at
 * least once) in EvoMap's shape, with the open tasks the node may claim (`available_work`). Its
 * `status`: `unknown_node` for an id nobody registered (so the client says hello again), `suspended`
 * for a node an admin suspended (nothing recorded or delivered), `rate_limited` over
 * `A2A_LIMITS.heartbeats` (nothing recorded; `next_heartbeat_ms` says when there is room), else `ok`.
 */
export async function a2aHeartbeat(
  env: Env,
  db: Db,
  body: z.infer<typeof heartbeatBody>,
  token: string | undefined | null,
  now: Date,
  opts: { admit: Admit; projects: ProjectsConfig; defer?: (work: Promise<unknown>) => void },
) {
  const nodeId = (body.node_id ?? body.sender_id)!;
  if (body.node_id && body.sender_id && body.node_id !== body.sender_id)
    throw new AppError("forbidden", "node_id and sender_id name different nodes");
  if (!token) {
    if (!(await findNode(db, nodeId))) return beatAnswer("unknown_node", nodeId, now);
    throw new AppError("unauthorized", token === undefined ? "A bearer token is required" : "The bearer token is not valid");
  }
  const auth = await authenticateA2a(env, db, token, nodeId, now);
  if (!auth.ok) {
    if (auth.reason === "unknown_node") return beatAnswer("unknown_node", nodeId, now);
    throw authProblem(auth.reason);
  }
  if (auth.node.suspendedAt) return beatAnswer("suspended", nodeId, now, { suspended_at: auth.node.suspendedAt });
  const admitted = await opts.admit(`a2a-heartbeat:${nodeId}`, A2A_LIMITS.heartbeats, crypto.randomUUID());
  if (!admitted.ok) {
    return beatAnswer("rate_limited", nodeId, now, {
      next_heartbeat_ms: Math.max(admitted.retry_after_ms, 1_000),
      retry_after_ms: admitted.retry_after_ms,
    });
  }
  const beat = await heartbeat(
    db,
    nodeId,
    body.ack_through === undefined ? undefined : Number(body.ack_through),
    now,
    nodePresence(env, opts.defer ? { defer: opts.defer } : {}),
  );
  return beatAnswer("ok", nodeId, now, {
    has_pending_events: beat.pending_events.length > 0,
    pending_events: beat.pending_events,
    has_more: beat.has_more,
    available_work: await claimableTasks(db, auth.node, now, opts.projects),
  });
}

/** How long a poll without `timeout_ms` holds (EvoMap's client waits 60 s for an answer). */
export const DEFAULT_POLL_WAIT_MS = 25_000;

export const pollBody = z.object({
  node_id: z.string().max(128).optional(),
  sender_id: z.string().max(128).optional(),
  timeout_ms: z.number().int().min(0).max(25_000).optional(),
  ack_through: ackThrough.optional(),
});

/** Real time: a long-poll's wait bounds a request, whatever the test clock says. */
export interface Waiter {
  sleep(ms: number): Promise<void>;
  nowMs(): number;
}
const realTime: Waiter = { sleep: (ms) => new Promise<void>((r) => setTimeout(r, ms)), nowMs: () => Date.now() };
const POLL_EVERY_MS = 500;

/**
 * `POST /a2a/events/poll`: heartbeats once (recording the call, applying `ack_through`), then holds up
 * to `timeout_ms` (default `DEFAULT_POLL_WAIT_MS`) for a pending event, re-reading only while it waits.
 *
 * Delivery: a poll that carries `ack_through` is at least once, as on `/v1` (what it returns stays
 * pending until a later `ack_through`). One without it (EvoMap's client never acknowledges) takes what
 * it returns: those events count as delivered and no later poll or heartbeat shows them again.
 */
export async function pollEvents(
  db: Db,
  presence: PresenceRecorder,
  nodeId: string,
  body: z.infer<typeof pollBody>,
  now: Date,
  wait: Waiter = realTime,
) {
  const explicit = body.ack_through !== undefined;
  const deadline = wait.nowMs() + (body.timeout_ms ?? DEFAULT_POLL_WAIT_MS);
  let beat: Beat = await heartbeat(db, nodeId, explicit ? Number(body.ack_through) : undefined, now, presence);
  for (;;) {
    if (beat.pending_events.length > 0) {
      if (explicit) return pollAnswer(nodeId, beat, true, "ack_through");
      const taken = await takePendingEvents(db, nodeId);
      // Empty when a concurrent poll or stream took them first: wait on.
      if (taken.pending_events.length > 0) return pollAnswer(nodeId, taken, taken.has_more, "delivered");
    }
    const left = deadline - wait.nowMs();
    if (left <= 0) return pollAnswer(nodeId, { pending_events: [], has_more: false }, false, explicit ? "ack_through" : "delivered");
    await wait.sleep(Math.min(POLL_EVERY_MS, left));
    beat = await pendingEvents(db, nodeId);
  }
}

function pollAnswer(nodeId: string, beat: Beat, stillPending: boolean, delivery: "ack_through" | "delivered") {
  return { node_id: nodeId, events: beat.pending_events, has_pending_events: stillPending, has_more: beat.has_more, delivery };
}
