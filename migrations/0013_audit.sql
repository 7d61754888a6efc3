CREATE TABLE `audit_chain` (
	`seq` integer PRIMARY KEY NOT NULL,
	`event_id` integer NOT NULL,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL,
	`ref` text,
	`sealed_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_chain_event_id_unique` ON `audit_chain` (`event_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `audit_chain_prev_hash_unique` ON `audit_chain` (`prev_hash`);--> statement-breakpoint
CREATE TABLE `audit_checkpoints` (
	`seq` integer PRIMARY KEY NOT NULL,
	`hash` text NOT NULL,
	`at` text NOT NULL,
	`kid` text NOT NULL,
	`sig` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_checkpoints_kid_idx` ON `audit_checkpoints` (`kid`,`seq`);--> statement-breakpoint
CREATE TABLE `audit_keys` (
	`kid` text PRIMARY KEY NOT NULL,
	`public_key` text NOT NULL,
	`first_seq` integer NOT NULL,
	`first_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_keys_first_seq_unique` ON `audit_keys` (`first_seq`);--> statement-breakpoint
-- The audit chain is one line (issue 24): an insert that is not the next link (seq = head + 1, prev_hash = the head's hash or 64 zeros for seq 1, an event id above the head's) is refused, so no fork, gap or reorder can be written.
CREATE TRIGGER `audit_chain_next_link` BEFORE INSERT ON `audit_chain` WHEN NEW.`seq` IS NOT COALESCE((SELECT MAX(`seq`) FROM `audit_chain`), 0) + 1 OR NEW.`prev_hash` IS NOT COALESCE((SELECT `hash` FROM `audit_chain` WHERE `seq` = NEW.`seq` - 1), '0000000000000000000000000000000000000000000000000000000000000000') OR NEW.`event_id` <= COALESCE((SELECT MAX(`event_id`) FROM `audit_chain`), 0) BEGIN SELECT RAISE(ABORT, 'audit_chain: not the next link'); END;--> statement-breakpoint
CREATE TRIGGER `audit_chain_no_update` BEFORE UPDATE ON `audit_chain` BEGIN SELECT RAISE(ABORT, 'audit_chain is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `audit_chain_no_delete` BEFORE DELETE ON `audit_chain` BEGIN SELECT RAISE(ABORT, 'audit_chain is append-only'); END;--> statement-breakpoint
-- A checkpoint signs a head the chain holds, after the previous checkpoint; checkpoints and keys are append-only.
CREATE TRIGGER `audit_checkpoints_on_chain` BEFORE INSERT ON `audit_checkpoints` WHEN NEW.`hash` IS NOT (SELECT `hash` FROM `audit_chain` WHERE `seq` = NEW.`seq`) OR NEW.`seq` <= COALESCE((SELECT MAX(`seq`) FROM `audit_checkpoints`), 0) BEGIN SELECT RAISE(ABORT, 'audit_checkpoints: not a later head of the chain'); END;--> statement-breakpoint
CREATE TRIGGER `audit_checkpoints_no_update` BEFORE UPDATE ON `audit_checkpoints` BEGIN SELECT RAISE(ABORT, 'audit_checkpoints is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `audit_checkpoints_no_delete` BEFORE DELETE ON `audit_checkpoints` BEGIN SELECT RAISE(ABORT, 'audit_checkpoints is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `audit_keys_no_update` BEFORE UPDATE ON `audit_keys` BEGIN SELECT RAISE(ABORT, 'audit_keys is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `audit_keys_no_delete` BEFORE DELETE ON `audit_keys` BEGIN SELECT RAISE(ABORT, 'audit_keys is append-only'); END;
