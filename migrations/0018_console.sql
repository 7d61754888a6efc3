-- Issue 25: web console sessions (src/db/schema/console.ts). Written by hand: drizzle-kit's diff
-- would also hold the tables of migrations being written beside it (0014-0017).
CREATE TABLE `console_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`secret_hash` text NOT NULL,
	`csrf_token` text NOT NULL,
	`operator_id` text NOT NULL,
	`admin_token_hash` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked_at` text
);
--> statement-breakpoint
CREATE INDEX `console_sessions_operator_idx` ON `console_sessions` (`operator_id`);
