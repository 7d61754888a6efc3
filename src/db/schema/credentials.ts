import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const CREDENTIAL_KINDS = ["operator", "runner", "node", "member"] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

export const OPERATOR_ROLES = ["viewer", "manager", "admin"] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

/**
 * Every bearer token but the bootstrap ADMIN_TOKEN. A token is `<id>.<secret>`: the id finds the
 * row, the secret is compared against `secret_hash` (SHA-256) in constant time.
 */
export const credentials = sqliteTable(
  "credentials",
  {
    id: text("id").primaryKey(),
    kind: text("kind", { enum: CREDENTIAL_KINDS }).notNull(),
    name: text("name").notNull(),
    role: text("role", { enum: OPERATOR_ROLES }),
    // What the token speaks for: a node id, or a member token's task/round/role scope.
    subject: text("subject"),
    secretHash: text("secret_hash").notNull(),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at"),
    revokedAt: text("revoked_at"),
  },
  (t) => [index("credentials_kind_idx").on(t.kind, t.createdAt)],
);
