import { and, eq, isNull, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import { consoleSessions, type ConsoleSessionRow } from "../db/schema";
import type { Env } from "../env";
import { authenticate, BOOTSTRAP_ADMIN_ID, type Principal } from "../lib/auth";
import { findCredential } from "../lib/credentials";
import { matchesHash, secretsEqual, sha256Hex } from "../lib/crypto";
import { appendEvent } from "../lib/events";
import { newId, randomHex } from "../lib/ids";

/** A console session lasts at most this long from login (then the operator logs in again). */
export const SESSION_TTL_MS = 12 * 60 * 60_000;

export type OperatorPrincipal = Extract<Principal, { kind: "operator" }>;

export interface ConsoleSession {
  id: string;
  csrfToken: string;
  expiresAt: string;
  principal: OperatorPrincipal;
}

/**
 * Exchanges an operator token for a session: `null` when the token is not a live operator token
 * (a runner's, a node's or a member's token does not open the console). Returns the cookie value,
 * `<id>.<secret>`; only the secret's SHA-256 is stored, so it is shown once, to the browser.
 */
export async function openSession(env: Env, db: Db, token: string, now: Date): Promise<{ cookie: string; session: ConsoleSession } | null> {
  const principal = await authenticate(env, token, now);
  if (!principal || principal.kind !== "operator") return null;
  const id = newId("csess");
  const secret = randomHex(32);
  const csrfToken = randomHex(32);
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS).toISOString();
  await db.batch([
    db.insert(consoleSessions).values({
      id,
      secretHash: await sha256Hex(secret),
      csrfToken,
      operatorId: principal.id,
      // The bootstrap token has no credential row to revoke: the session ends when the secret changes.
      adminTokenHash: principal.id === BOOTSTRAP_ADMIN_ID ? await sha256Hex(token) : null,
      createdAt: now.toISOString(),
      expiresAt,
    }),
    // Sessions that ended a day ago or more go (their opening and closing stay in the events).
    db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, new Date(now.getTime() - 86_400_000).toISOString())),
    appendEvent(
      db,
      {
        type: "console.session_opened",
        subject: principal.id,
        payload: { session_id: id, operator_id: principal.id, role: principal.role },
      },
      now,
    ),
  ]);
  return { cookie: `${id}.${secret}`, session: { id, csrfToken, expiresAt, principal } };
}

const COOKIE_VALUE = /^(csess_[0-9a-f]{16})\.([0-9a-f]{64})$/;

/**
 * The live session a cookie names, with its operator as it is now: `null` when the cookie is not one
 * of ours, the session expired or was closed, or its operator was revoked (read uncached, so a
 * revocation ends the session at once). Nothing here is cached: every console request checks.
 */
export async function resolveSession(env: Env, db: Db, cookie: string, now: Date): Promise<ConsoleSession | null> {
  const match = COOKIE_VALUE.exec(cookie);
  if (!match) return null;
  const row = await db.select().from(consoleSessions).where(eq(consoleSessions.id, match[1]!)).get();
  if (!row || !(await matchesHash(match[2]!, row.secretHash))) return null;
  if (row.revokedAt || row.expiresAt <= now.toISOString()) return null;
  const principal = await operatorOf(env, db, row, now);
  return principal ? { id: row.id, csrfToken: row.csrfToken, expiresAt: row.expiresAt, principal } : null;
}

async function operatorOf(env: Env, db: Db, row: ConsoleSessionRow, now: Date): Promise<OperatorPrincipal | null> {
  if (row.operatorId === BOOTSTRAP_ADMIN_ID) {
    if (!env.ADMIN_TOKEN || !row.adminTokenHash) return null;
    if (!(await secretsEqual(await sha256Hex(env.ADMIN_TOKEN), row.adminTokenHash))) return null;
    return { kind: "operator", id: BOOTSTRAP_ADMIN_ID, name: "ADMIN_TOKEN", role: "admin" };
  }
  const cred = await findCredential(db, row.operatorId);
  if (!cred || cred.kind !== "operator" || cred.revokedAt) return null;
  if (cred.expiresAt && cred.expiresAt <= now.toISOString()) return null;
  return { kind: "operator", id: cred.id, name: cred.name, role: cred.role ?? "viewer" };
}

/** Logout: the session stops working at once; closing a closed session changes nothing. */
export async function closeSession(db: Db, session: ConsoleSession, now: Date): Promise<void> {
  await db.batch([
    db
      .update(consoleSessions)
      .set({ revokedAt: now.toISOString() })
      .where(and(eq(consoleSessions.id, session.id), isNull(consoleSessions.revokedAt))),
    appendEvent(
      db,
      {
        type: "console.session_closed",
        subject: session.principal.id,
        payload: { session_id: session.id, operator_id: session.principal.id },
      },
      now,
    ),
  ]);
}

/** The form token check (constant time). */
export function csrfMatches(session: ConsoleSession, presented: string | undefined): Promise<boolean> {
  if (!presented) return Promise.resolve(false);
  return secretsEqual(presented, session.csrfToken);
}
