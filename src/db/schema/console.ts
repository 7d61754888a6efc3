import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * A web console session (issue 25): an operator token exchanged at the login form for a cookie.
 * The cookie is `<id>.<secret>`; only the secret's SHA-256 is stored. A session lives until
 * `expires_at`, its logout (`revoked_at`), or its operator's revocation, checked on every request.
 * `csrf_token` is the synchronizer token every console form carries. `admin_token_hash` is set only
 * for a session opened with the bootstrap ADMIN_TOKEN (no credential row to revoke): the session
 * ends when that secret changes.
 */
export const consoleSessions = sqliteTable(
  "console_sessions",
  {
    id: text("id").primaryKey(),
    secretHash: text("secret_hash").notNull(),
    csrfToken: text("csrf_token").notNull(),
    operatorId: text("operator_id").notNull(),
    adminTokenHash: text("admin_token_hash"),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
  },
  (t) => [index("console_sessions_operator_idx").on(t.operatorId)],
);
export type ConsoleSessionRow = typeof consoleSessions.$inferSelect;
