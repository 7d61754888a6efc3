import { and, eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { guarded, isGuardFailure } from "../db/guard";
import { credentials, nodes } from "../db/schema";
import { forgetCachedCredential, mintCredential } from "../lib/credentials";
import { matchesHash } from "../lib/crypto";
import { appendEvent } from "../lib/events";
import type { NodeRow } from "./registry";

/**
 * A node secret as EvoMap clients take it: exactly 64 hex (they drop anything else). It is the part
 * after the dot of the node's `ncred_<16 hex>.<64 hex>` credential token, so one credential row
 * (stored hashed) serves `/v1` (the whole token) and the /a2a facade (the secret alone, looked up by
 * the node id the request names).
 */
export const NODE_SECRET_PATTERN = /^[a-f0-9]{64}$/i;

export type SecretCheck =
  { ok: true; node: NodeRow; credentialId: string; credentialName: string } | { ok: false; reason: "unknown_node" | "node_secret_invalid" };

/**
 * Checks a presented 64-hex secret against the current credential of the node `nodeId` names: one
 * read (the node and its credential together), the hashes compared in constant time, and the
 * credential live (a node credential of this node, not revoked, not expired).
 */
export async function checkNodeSecret(db: Db, nodeId: string, secret: string, now: Date): Promise<SecretCheck> {
  const row = await db
    .select({ node: nodes, cred: credentials })
    .from(nodes)
    .leftJoin(credentials, eq(credentials.id, nodes.credentialId))
    .where(eq(nodes.id, nodeId))
    .get();
  if (!row) return { ok: false, reason: "unknown_node" };
  const cred = row.cred;
  // Hash and compare before looking at anything else, so a wrong secret and a dead credential take the same time.
  const matches = await matchesHash(secret.toLowerCase(), cred?.secretHash ?? "0".repeat(64));
  if (!cred || !matches) return { ok: false, reason: "node_secret_invalid" };
  const live =
    cred.kind === "node" && cred.subject === nodeId && !cred.revokedAt && !(cred.expiresAt && cred.expiresAt <= now.toISOString());
  if (!live) return { ok: false, reason: "node_secret_invalid" };
  return { ok: true, node: row.node, credentialId: cred.id, credentialName: cred.name };
}

/**
 * Gives a node a new secret in one batch: the new credential, the node pointed at it, the old one
 * revoked, and the event. The node must still be on the credential the caller authenticated with
 * (`node.credentialId`): of racing rotations exactly one lands (a guarded write aborts the others'
 * batches, leaving no stray credential), and the losers get null.
 */
export async function rotateNodeSecret(db: Db, node: NodeRow, now: Date, via: string): Promise<{ secret: string; token: string } | null> {
  const at = now.toISOString();
  const cred = await mintCredential(db, { kind: "node", name: node.name, subject: node.id }, now);
  try {
    await db.batch([
      cred.insert,
      db
        .update(nodes)
        .set({ credentialId: sql`${guarded(sql`${nodes.credentialId} = ${node.credentialId}`, cred.id)}`, updatedAt: at })
        .where(eq(nodes.id, node.id)),
      db
        .update(credentials)
        .set({ revokedAt: at })
        .where(and(eq(credentials.id, node.credentialId), isNull(credentials.revokedAt))),
      appendEvent(db, { type: "node.secret_rotated", subject: node.id, payload: { node_id: node.id, via } }, now),
    ]);
  } catch (err) {
    if (isGuardFailure(err, "nodes.credential_id")) return null;
    throw err;
  }
  forgetCachedCredential(node.credentialId);
  return { secret: cred.secret, token: cred.token };
}
