import type { Db } from "../db/client";
import type { Env } from "../env";
import { authenticate, type Principal } from "../lib/auth";
import { AppError } from "../lib/errors";
import { assertNotSuspended, findNode, type NodeRow } from "../nodes/registry";
import { checkNodeSecret, NODE_SECRET_PATTERN } from "../nodes/secrets";

export type NodePrincipal = Extract<Principal, { kind: "node" }>;

export type A2aAuth =
  | { ok: true; principal: NodePrincipal; node: NodeRow }
  | { ok: false; reason: "unknown_node" | "node_secret_invalid" | "no_node_named" | "not_a_node" | "other_node" };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" && v.length > 0 && v.length <= 128 ? v : undefined);

/**
 * The node a facade request says it comes from: a query's `node_id`, else a flat body's `node_id` or
 * `sender_id`, else an envelope's `sender_id` (or its payload's `node_id`). EvoMap clients name
 * themselves on every request; the secret they send is looked up by this id.
 */
export function namedNode(body: unknown, queryNodeId?: string): string | undefined {
  if (queryNodeId) return queryNodeId;
  if (!isObject(body)) return undefined;
  const payload = isObject(body.payload) ? body.payload : {};
  return str(body.node_id) ?? str(body.sender_id) ?? str(payload.node_id);
}

/**
 * Authenticates a facade request. The bearer is either an EvoMap node secret (64 hex: checked against
 * the current credential of the node the request names) or crewplane's whole node token
 * (`ncred_….<64 hex>`, the `/v1` one), whose node must then be the one named, when one is.
 */
export async function authenticateA2a(env: Env, db: Db, token: string, nodeId: string | undefined, now: Date): Promise<A2aAuth> {
  if (NODE_SECRET_PATTERN.test(token)) {
    if (!nodeId) return { ok: false, reason: "no_node_named" };
    const check = await checkNodeSecret(db, nodeId, token, now);
    if (!check.ok) return check;
    return { ok: true, node: check.node, principal: { kind: "node", id: check.credentialId, name: check.credentialName, nodeId } };
  }
  const principal = await authenticate(env, token, now);
  if (!principal) {
    if (nodeId && !(await findNode(db, nodeId))) return { ok: false, reason: "unknown_node" };
    return { ok: false, reason: "node_secret_invalid" };
  }
  if (principal.kind !== "node") return { ok: false, reason: "not_a_node" };
  if (nodeId && principal.nodeId !== nodeId) return { ok: false, reason: "other_node" };
  const node = await findNode(db, principal.nodeId);
  if (!node) return { ok: false, reason: "unknown_node" };
  return { ok: true, principal, node };
}

/** The problem for a failed facade authentication; `reason` is the token EvoMap clients look for. */
export function authProblem(reason: Exclude<A2aAuth, { ok: true }>["reason"]): AppError {
  switch (reason) {
    case "no_node_named":
      return new AppError("unauthorized", "A node_secret is looked up by the node the request names: send node_id or sender_id", {
        extra: { reason },
      });
    case "not_a_node":
      return new AppError("forbidden", "This endpoint takes a node's secret", { extra: { reason } });
    case "other_node":
      return new AppError("forbidden", "sender_id/node_id is not the node this secret belongs to", { extra: { reason } });
    case "unknown_node":
      return new AppError("unauthorized", "No node is registered under this id: say hello first", { extra: { reason } });
    case "node_secret_invalid":
      return new AppError("unauthorized", "The bearer token is not this node's current secret", { extra: { reason } });
  }
}

/** A suspended node's facade writes are refused until an admin lifts the suspension (the `/v1` rule). */
export function refuseSuspended(node: NodeRow): void {
  assertNotSuspended(node);
}
