import { and, eq } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { councilTermMembers, councilTerms, nodes } from "../db/schema";
import { mintCredential } from "../lib/credentials";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId, randomHex } from "../lib/ids";
import { label } from "../lib/validation";
import { adminSetStatements } from "./reputation";

export type NodeRow = typeof nodes.$inferSelect;

/**
 * A node id: `node_` + 12 to 32 lowercase hex. crewplane mints 16 (`POST /v1/nodes`); EvoMap clients
 * generate 12 and keep it (the /a2a facade registers a node under the id its client chose).
 */
export const NODE_ID_PATTERN = /^node_[a-f0-9]{12,32}$/;
export const nodeIdSchema = z.string().regex(NODE_ID_PATTERN, "a node id (node_ + 12 to 32 lowercase hex)");

const PRIVATE_HOST =
  /^(?:localhost|.*\.localhost|127\.\d+\.\d+\.\d+|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+|169\.254\.\d+\.\d+|0\.0\.0\.0|\[.*\])$/i;

/**
 * A webhook URL: https, no credentials in it, and (in production) no loopback, private or link-local
 * host. Nothing is pushed until an admin marks the webhook verified.
 */
export function webhookUrl(production: boolean) {
  return z
    .url({ protocol: production ? /^https$/ : /^https?$/ })
    .max(2_000)
    .superRefine((value, ctx) => {
      // zod runs this even when the url check above failed: a value that does not parse is already refused.
      if (!URL.canParse(value)) return;
      const u = new URL(value);
      if (u.username || u.password) ctx.addIssue({ code: "custom", message: "must not carry credentials" });
      if (production && PRIVATE_HOST.test(u.hostname)) ctx.addIssue({ code: "custom", message: "must be a public host" });
    });
}

export function registrationSchema(production: boolean) {
  return z.strictObject({
    name: label(100),
    model_tier: z.number().int().min(0).max(5),
    webhook_url: webhookUrl(production).optional(),
  });
}
export type Registration = z.infer<ReturnType<typeof registrationSchema>>;

export interface Registered {
  node: NodeRow;
  /** The bearer token a node authenticates with: `<credential id>.<secret>`, shown once. */
  node_secret: string;
  /** The 64 hex of that token after the dot: what the /a2a facade hands an EvoMap node (looked up by node id). */
  secret: string;
  /** The HMAC-SHA256 key of webhook pushes, shown once; only when a webhook_url was given. */
  webhook_secret?: string;
}

/**
 * Registers a node: its id (`node_` + 16 hex), its credential (stored hashed) and the node row land
 * in one batch with the event. New nodes start at `initialReputation`.
 */
export async function registerNode(
  db: Db,
  input: Registration,
  initialReputation: number,
  now: Date,
  /** `id`: an id the caller chose (the /a2a facade keeps an EvoMap node's own `node_` + 16 hex); `detail`: more for the event. */
  options: { id?: string; detail?: Record<string, unknown> } = {},
): Promise<Registered> {
  const id = options.id ?? newId("node");
  const at = now.toISOString();
  const cred = await mintCredential(db, { kind: "node", name: input.name, subject: id }, now);
  const webhookSecret = input.webhook_url ? randomHex(32) : undefined;
  const [, [node]] = await db.batch([
    cred.insert,
    db
      .insert(nodes)
      .values({
        id,
        name: input.name,
        modelTier: input.model_tier,
        reputation: initialReputation,
        credentialId: cred.id,
        webhookUrl: input.webhook_url ?? null,
        webhookSecret: webhookSecret ?? null,
        createdAt: at,
        updatedAt: at,
      })
      .returning(),
    appendEvent(
      db,
      {
        type: "node.registered",
        subject: id,
        payload: {
          node_id: id,
          name: input.name,
          model_tier: input.model_tier,
          reputation: initialReputation,
          webhook: Boolean(input.webhook_url),
          ...options.detail,
        },
      },
      now,
    ),
  ]);
  return {
    node: node!,
    node_secret: cred.token,
    secret: cred.secret,
    ...(webhookSecret ? { webhook_secret: webhookSecret } : {}),
  };
}

export function findNode(db: Db, nodeId: string) {
  return db.select().from(nodes).where(eq(nodes.id, nodeId)).get();
}

export async function getNode(db: Db, nodeId: string): Promise<NodeRow> {
  const node = await findNode(db, nodeId);
  if (!node) throw notFound(`node ${nodeId}`);
  return node;
}

/**
 * An admin's suspension (`PATCH /v1/admin/nodes/:id {suspended: true}`) stops a node's writes on every
 * surface: `/v1` and `/a2a` refuse them with `403 forbidden`, `reason: node_suspended` (the /a2a
 * heartbeat answers `status: "suspended"` instead, as EvoMap's protocol has it).
 */
export function assertNotSuspended(node: Pick<NodeRow, "suspendedAt">): void {
  if (node.suspendedAt) {
    throw new AppError("forbidden", "This node is suspended by an admin", {
      extra: { reason: "node_suspended", suspended_at: node.suspendedAt },
    });
  }
}

/** The node, refused when an admin suspended it (`assertNotSuspended`). */
export async function getActiveNode(db: Db, nodeId: string): Promise<NodeRow> {
  const node = await getNode(db, nodeId);
  assertNotSuspended(node);
  return node;
}

export async function isCouncilMember(db: Db, nodeId: string): Promise<boolean> {
  const row = await db
    .select({ termId: councilTermMembers.termId })
    .from(councilTermMembers)
    .innerJoin(councilTerms, and(eq(councilTerms.id, councilTermMembers.termId), eq(councilTerms.status, "active")))
    .where(eq(councilTermMembers.nodeId, nodeId))
    .get();
  return Boolean(row);
}

/** The public view: nothing secret (no webhook URL or key, no credential id). */
export function nodeView(node: NodeRow, councilMember: boolean) {
  return {
    node_id: node.id,
    name: node.name,
    reputation: node.reputation,
    model_tier: node.modelTier,
    last_heartbeat_at: node.lastHeartbeatAt,
    last_dialog_at: node.lastDialogAt,
    council_member: councilMember,
    cooldown_until: node.cooldownUntil,
    webhook_verified: node.webhookVerified,
    suspended_at: node.suspendedAt,
    created_at: node.createdAt,
  };
}

export const nodePatch = z
  .strictObject({
    reputation: z.number().min(0).max(100).optional(),
    model_tier: z.number().int().min(0).max(5).optional(),
    webhook_verified: z.boolean().optional(),
    /** Suspends the node (true) or lifts a suspension (false): see `suspended_at`. */
    suspended: z.boolean().optional(),
  })
  .refine((p) => Object.keys(p).length > 0, { message: "name at least one of reputation, model_tier, webhook_verified, suspended" });
export type NodePatch = z.infer<typeof nodePatch>;

/**
 * Admin changes to standing, webhook verification and suspension, with the previous values in the
 * event. A reputation set by hand goes through the ledger (source `admin`) like every other change.
 */
export async function patchNode(db: Db, nodeId: string, patch: NodePatch, by: string, now: Date): Promise<NodeRow> {
  const node = await getNode(db, nodeId);
  if (patch.webhook_verified && !node.webhookUrl) throw new AppError("conflict", "This node registered no webhook_url to verify");
  const set = {
    ...(patch.model_tier !== undefined ? { modelTier: patch.model_tier } : {}),
    ...(patch.webhook_verified !== undefined ? { webhookVerified: patch.webhook_verified } : {}),
    // Suspending a suspended node keeps the first time; lifting clears it.
    ...(patch.suspended !== undefined ? { suspendedAt: patch.suspended ? (node.suspendedAt ?? now.toISOString()) : null } : {}),
    updatedAt: now.toISOString(),
  };
  await db.batch([
    db.update(nodes).set(set).where(eq(nodes.id, nodeId)),
    ...(patch.reputation !== undefined ? adminSetStatements(db, nodeId, patch.reputation, by, now) : []),
    appendEvent(
      db,
      {
        type: "node.updated",
        subject: nodeId,
        payload: {
          node_id: nodeId,
          by,
          changes: patch,
          before: {
            reputation: node.reputation,
            model_tier: node.modelTier,
            webhook_verified: node.webhookVerified,
            suspended: node.suspendedAt !== null,
          },
        },
      },
      now,
    ),
  ]);
  return getNode(db, nodeId);
}
