-- The role ledger is append-only (seed 002 role_turns): refuse every UPDATE and DELETE of a row.
CREATE TRIGGER `role_turns_no_update` BEFORE UPDATE ON `role_turns` BEGIN SELECT RAISE(ABORT, 'role_turns is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `role_turns_no_delete` BEFORE DELETE ON `role_turns` BEGIN SELECT RAISE(ABORT, 'role_turns is append-only'); END;
