import { and, asc, eq, gt, or } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { credentials, type CredentialKind, type OperatorRole } from "../db/schema";
import { sha256Hex } from "./crypto";
import { AppError } from "./errors";
import { appendEvent } from "./events";
import { newId, randomHex } from "./ids";
import { takePage } from "./paging";

export const ID_PREFIX: Record<CredentialKind, string> = { operator: "op", runner: "rnr", node: "ncred", member: "mbr" };

export interface CredentialSpec {
  kind: CredentialKind;
  name: string;
  role?: OperatorRole;
  subject?: string;
  expiresAt?: Date;
}

/**
 * Mints `<id>.<secret>`; only the secret's SHA-256 is stored, so the token is shown once.
 * Returns the insert un-executed for the caller's batch.
 */
export async function mintCredential(db: Db, spec: CredentialSpec, now: Date) {
  const id = newId(ID_PREFIX[spec.kind]);
  const secret = randomHex(32);
  const insert = db.insert(credentials).values({
    id,
    kind: spec.kind,
    name: spec.name,
    role: spec.role ?? null,
    subject: spec.subject ?? null,
    secretHash: await sha256Hex(secret),
    createdAt: now.toISOString(),
    expiresAt: spec.expiresAt?.toISOString() ?? null,
  });
  // `secret` alone is also what the /a2a facade hands an EvoMap node (its clients take exactly 64 hex).
  return { id, secret, token: `${id}.${secret}`, insert };
}

export function findCredential(db: Db, id: string) {
  return db.select().from(credentials).where(eq(credentials.id, id)).get();
}

/**
 * How long this isolate trusts a credential row it read: a token revoked elsewhere stops working
 * within this time (under the promised 5 s); one revoked through this isolate stops at once.
 */
export const CREDENTIAL_CACHE_MS = 4_000;
const CREDENTIAL_CACHE_MAX = 1_000;
type CredentialRow = NonNullable<Awaited<ReturnType<typeof findCredential>>>;
const credentialCache = new Map<string, { row: CredentialRow; until: number }>();

/**
 * `findCredential` through a short per-isolate cache, so a busy runner's every call does not cost
 * a D1 read. Only rows that exist are kept (a flood of made-up ids cannot fill it), at most
 * CREDENTIAL_CACHE_MAX of them, oldest dropped first.
 */
export async function findCredentialCached(db: Db, id: string): Promise<CredentialRow | undefined> {
  const now = Date.now();
  const hit = credentialCache.get(id);
  if (hit && hit.until > now) return hit.row;
  const row = await findCredential(db, id);
  credentialCache.delete(id);
  if (row) {
    if (credentialCache.size >= CREDENTIAL_CACHE_MAX) credentialCache.delete(credentialCache.keys().next().value!);
    credentialCache.set(id, { row, until: now + CREDENTIAL_CACHE_MS });
  }
  return row;
}

/**
 * The rule `authenticate` (lib/auth.ts) applies to a presented `<id>.<secret>`, as SQL text of a
 * scalar for a statement that authenticates as it writes (one round trip instead of a read before
 * the write): the subject of credential `id` when it is of `kind`, its stored hash is `secretHash`
 * (the SHA-256 of the presented secret), and it is neither revoked nor expired at `now`; otherwise
 * NULL. `id`, `secretHash` and `nowIso` name the statement's bound parameters (e.g. "?9"); `kind`
 * is one of CREDENTIAL_KINDS, so it goes in as a literal. Being evaluated in the write, it sees a
 * revocation at once (no cache). Comparing digests with `=` gives nothing away that matters:
 * learning a stored digest does not yield a secret that hashes to it.
 */
export function liveSubjectSql(kind: CredentialKind, id: string, secretHash: string, nowIso: string): string {
  return `(SELECT subject FROM credentials WHERE id = ${id} AND kind = '${kind}' AND secret_hash = ${secretHash}
    AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${nowIso}))`;
}

/** A token is `<credential id>.<secret>`; anything else is not one of ours. */
export function splitToken(token: string): { id: string; secret: string } | null {
  const match = /^([a-z]+_[0-9a-f]{16})\.([0-9a-f]{64})$/.exec(token);
  return match ? { id: match[1]!, secret: match[2]! } : null;
}

/** How credentials are ordered in a list, and so what a page cursor holds: `[created_at, id]`. */
export const credentialCursor = z.tuple([z.string().max(64), z.string().max(64)]);

/**
 * One page of a kind's credentials, oldest first, keyset-paged on (created_at, id) so a page
 * never repeats or skips a row when tokens are minted or revoked between requests.
 */
export async function listCredentials(db: Db, kind: CredentialKind, page: { limit: number; after?: z.infer<typeof credentialCursor> }) {
  const after = page.after
    ? or(gt(credentials.createdAt, page.after[0]), and(eq(credentials.createdAt, page.after[0]), gt(credentials.id, page.after[1])))
    : undefined;
  const rows = await db
    .select()
    .from(credentials)
    .where(and(eq(credentials.kind, kind), after))
    .orderBy(asc(credentials.createdAt), asc(credentials.id))
    .limit(page.limit + 1)
    .all();
  return takePage(rows, page.limit, (r) => [r.createdAt, r.id]);
}

/** Drops a credential from this isolate's cache (its row changed here: a node secret rotated). */
export function forgetCachedCredential(id: string): void {
  credentialCache.delete(id);
}

/**
 * Revokes a token at once (the next request with it gets 401). Revoking twice keeps the first
 * time; an id of another kind is "not found", so an operator id cannot revoke a runner by mistake.
 */
export async function revokeCredential(db: Db, kind: CredentialKind, id: string, by: string, now: Date) {
  const row = await findCredential(db, id);
  if (!row || row.kind !== kind) throw new AppError("not_found", `${kind} ${id} not found`);
  credentialCache.delete(id);
  if (row.revokedAt) return row;
  const revokedAt = now.toISOString();
  const [, [updated]] = await db.batch([
    appendEvent(db, { type: `${kind}.revoked`, subject: id, payload: { [`${kind}_id`]: id, name: row.name, by } }, now),
    db
      .update(credentials)
      .set({ revokedAt })
      .where(and(eq(credentials.id, id), eq(credentials.kind, kind)))
      .returning(),
  ]);
  credentialCache.delete(id);
  return updated ?? { ...row, revokedAt };
}
