import { getDb } from "../db/client";
import { OPERATOR_ROLES, type OperatorRole } from "../db/schema";
import type { Env } from "../env";
import { matchesConfiguredSecret, matchesHash } from "./crypto";
import { findCredential, findCredentialCached, ID_PREFIX, splitToken } from "./credentials";

export type Principal =
  | { kind: "operator"; id: string; name: string; role: OperatorRole }
  | { kind: "runner"; id: string; name: string }
  | { kind: "node"; id: string; name: string; nodeId: string }
  | { kind: "member"; id: string; name: string; scope: string };

/** A presented credential token not yet checked: its id and the SHA-256 of its secret (see `requireAuthInWrite`). */
export interface PresentedToken {
  credential_id: string;
  secret_hash: string;
}

export type AuthVariables = {
  principal: Principal;
  /** Set by `requireAuthInWrite`: the token for the handler's write to check. */
  presented?: PresentedToken;
  /** Set by `requireAuthInWrite`: runs `requireAuth`'s check now (throws 401/403) and sets `principal`. */
  authenticate?: () => Promise<Principal>;
};

/** Which token kinds an endpoint accepts; `operator` names the lowest role let in. */
export interface AuthRule {
  operator?: OperatorRole;
  runner?: true;
  node?: true;
  member?: true;
}

/** The principal id of the bootstrap ADMIN_TOKEN (a shared setup secret, not a named person). */
export const BOOTSTRAP_ADMIN_ID = "bootstrap-admin";
const BOOTSTRAP_ADMIN: Principal = { kind: "operator", id: BOOTSTRAP_ADMIN_ID, name: "ADMIN_TOKEN", role: "admin" };

export function roleAtLeast(role: OperatorRole, required: OperatorRole): boolean {
  return OPERATOR_ROLES.indexOf(role) >= OPERATOR_ROLES.indexOf(required);
}

/** Resolves a bearer token to a principal, or null when it is not a live token of ours. */
export async function authenticate(env: Env, token: string, now: Date): Promise<Principal | null> {
  if (env.ADMIN_TOKEN && (await matchesConfiguredSecret(token, env.ADMIN_TOKEN))) return BOOTSTRAP_ADMIN;
  const parts = splitToken(token);
  if (!parts) return null;
  // Member tokens are revoked by code running elsewhere (a round ending in the inbox's owner call),
  // often seconds before a straggler uses them, and they see little traffic: never cached.
  const db = getDb(env.DB);
  const row = parts.id.startsWith(`${ID_PREFIX.member}_`) ? await findCredential(db, parts.id) : await findCredentialCached(db, parts.id);
  if (!row || !(await matchesHash(parts.secret, row.secretHash))) return null;
  if (row.revokedAt) return null;
  if (row.expiresAt && row.expiresAt <= now.toISOString()) return null;
  switch (row.kind) {
    case "operator":
      return { kind: "operator", id: row.id, name: row.name, role: row.role ?? "viewer" };
    case "runner":
      return { kind: "runner", id: row.id, name: row.name };
    case "node":
      return { kind: "node", id: row.id, name: row.name, nodeId: row.subject ?? "" };
    case "member":
      return { kind: "member", id: row.id, name: row.name, scope: row.subject ?? "" };
  }
}

export function permits(rule: AuthRule, principal: Principal): boolean {
  switch (principal.kind) {
    case "operator":
      return rule.operator !== undefined && roleAtLeast(principal.role, rule.operator);
    case "runner":
      return rule.runner === true;
    case "node":
      return rule.node === true;
    case "member":
      return rule.member === true;
  }
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match ? match[1]! : null;
}
