CREATE TABLE `reputation_ledger` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`batch_id` text NOT NULL,
	`node_id` text NOT NULL,
	`source` text NOT NULL,
	`reference` text NOT NULL,
	`day` text NOT NULL,
	`requested` real NOT NULL,
	`delta` real NOT NULL,
	`reputation_before` real NOT NULL,
	`reputation_after` real NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `reputation_ledger_reference_idx` ON `reputation_ledger` (`node_id`,`source`,`reference`);--> statement-breakpoint
CREATE INDEX `reputation_ledger_day_idx` ON `reputation_ledger` (`node_id`,`source`,`day`);--> statement-breakpoint
CREATE INDEX `reputation_ledger_batch_idx` ON `reputation_ledger` (`batch_id`);--> statement-breakpoint
CREATE INDEX `reputation_ledger_node_idx` ON `reputation_ledger` (`node_id`,`id`);--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `dispatch` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `offered_to` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `offer_expires_at` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `offer_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `offered_nodes` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `verified_by` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `verified_at` text;--> statement-breakpoint
CREATE INDEX `swarm_tasks_dispatch_idx` ON `swarm_tasks` (`dispatch`,`offer_expires_at`);--> statement-breakpoint
CREATE INDEX `swarm_tasks_claimed_by_idx` ON `swarm_tasks` (`claimed_by`,`status`);