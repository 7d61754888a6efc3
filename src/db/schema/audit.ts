import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The audit chain (issue 24): one row per sealed event, in the order the AuditSealer sealed them,
 * which is the order of `events.id` (commit order: D1 has one writer). Kept beside `events`, not in
 * it, so the feed stays append-only and byte-identical for everything that reads it. The migration
 * adds triggers: rows are never updated or deleted, and an insert that is not the next link (seq
 * not head+1, prev_hash not the head's hash, event id not above the head's) is refused, so the
 * database itself refuses a fork, a gap or a reorder.
 */
export const auditChain = sqliteTable("audit_chain", {
  seq: integer("seq").primaryKey(),
  eventId: integer("event_id").notNull().unique(),
  prevHash: text("prev_hash").notNull(),
  hash: text("hash").notNull(),
  /** JSON `{"role_turn":{task_id,seq,hash}}` for an event that closes a role-ledger stage; NULL otherwise. Hashed. */
  ref: text("ref"),
  /** When the sealer sealed it (not hashed): the sealing lag is sealed_at - events.created_at. */
  sealedAt: text("sealed_at").notNull(),
});

/** Signed checkpoints: the chain head `{seq, hash}` at `at`, Ed25519-signed under key `kid`. */
export const auditCheckpoints = sqliteTable(
  "audit_checkpoints",
  {
    seq: integer("seq").primaryKey(),
    hash: text("hash").notNull(),
    at: text("at").notNull(),
    kid: text("kid").notNull(),
    /** base64url (no padding) of the 64-byte signature. */
    sig: text("sig").notNull(),
  },
  (t) => [index("audit_checkpoints_kid_idx").on(t.kid, t.seq)],
);

/**
 * Every signing key, recorded when the sealer first signs with it. A key is valid from its first
 * checkpoint (`first_seq`, `first_at`) until the next key's first checkpoint, so a rotated key still
 * verifies the checkpoints it signed.
 */
export const auditKeys = sqliteTable("audit_keys", {
  kid: text("kid").primaryKey(),
  /** The Ed25519 public key: base64url of its 32 raw bytes (a JWK's `x`). */
  publicKey: text("public_key").notNull(),
  firstSeq: integer("first_seq").notNull().unique(),
  firstAt: text("first_at").notNull(),
});
