CREATE TABLE `node_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`node_id` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` text NOT NULL,
	`dedupe_key` text,
	`push_state` text,
	`delivered_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `node_events_dedupe_key_unique` ON `node_events` (`dedupe_key`);--> statement-breakpoint
CREATE INDEX `node_events_node_idx` ON `node_events` (`node_id`,`id`);--> statement-breakpoint
CREATE TABLE `nodes` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`model_tier` integer NOT NULL,
	`reputation` real NOT NULL,
	`credential_id` text NOT NULL,
	`webhook_url` text,
	`webhook_verified` integer DEFAULT false NOT NULL,
	`webhook_secret` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_heartbeat_at` text,
	`last_dialog_at` text,
	`cooldown_until` text,
	`acked_through` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `nodes_reputation_idx` ON `nodes` (`reputation`);--> statement-breakpoint
CREATE INDEX `nodes_credential_idx` ON `nodes` (`credential_id`);--> statement-breakpoint
CREATE TABLE `council_dialogs` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`seq` integer NOT NULL,
	`node_id` text NOT NULL,
	`role` text NOT NULL,
	`phase` text NOT NULL,
	`dialog_type` text NOT NULL,
	`content` text,
	`reply_to` text,
	`amendment_type` text,
	`amendment_target` text,
	`amendment_content` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `council_dialogs_seq_idx` ON `council_dialogs` (`session_id`,`seq`);--> statement-breakpoint
CREATE TABLE `council_electorate` (
	`session_id` text NOT NULL,
	`node_id` text NOT NULL,
	`kind` text NOT NULL,
	`weight` real NOT NULL,
	PRIMARY KEY(`session_id`, `node_id`)
);
--> statement-breakpoint
CREATE TABLE `council_proposals` (
	`id` text PRIMARY KEY NOT NULL,
	`node_id` text NOT NULL,
	`title` text NOT NULL,
	`body` text NOT NULL,
	`kind` text NOT NULL,
	`project` text,
	`status` text NOT NULL,
	`session_id` text,
	`prescreen` text NOT NULL,
	`rejection` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `council_proposals_node_idx` ON `council_proposals` (`node_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `council_proposals_status_idx` ON `council_proposals` (`status`);--> statement-breakpoint
CREATE TABLE `council_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`proposal_id` text NOT NULL,
	`term_id` text,
	`proposer_id` text NOT NULL,
	`phase` text NOT NULL,
	`version` integer NOT NULL,
	`state` text NOT NULL,
	`next_check_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `council_sessions_proposal_id_unique` ON `council_sessions` (`proposal_id`);--> statement-breakpoint
CREATE INDEX `council_sessions_due_idx` ON `council_sessions` (`next_check_at`);--> statement-breakpoint
CREATE INDEX `council_sessions_created_idx` ON `council_sessions` (`created_at`);--> statement-breakpoint
CREATE TABLE `council_term_members` (
	`term_id` text NOT NULL,
	`node_id` text NOT NULL,
	`joined_at` text NOT NULL,
	`retained` integer DEFAULT false NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`responses` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`term_id`, `node_id`)
);
--> statement-breakpoint
CREATE INDEX `council_term_members_node_idx` ON `council_term_members` (`node_id`);--> statement-breakpoint
CREATE TABLE `council_terms` (
	`id` text PRIMARY KEY NOT NULL,
	`number` integer NOT NULL,
	`status` text NOT NULL,
	`started_at` text NOT NULL,
	`ends_at` text NOT NULL,
	`session_count` integer DEFAULT 0 NOT NULL,
	`last_session_at` text,
	`dissolved_at` text,
	`dissolution_reasons` text,
	`efficiency_samples` text DEFAULT '[]' NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `council_terms_one_active` ON `council_terms` (`status`) WHERE status = 'active';--> statement-breakpoint
CREATE TABLE `council_votes` (
	`session_id` text NOT NULL,
	`node_id` text NOT NULL,
	`dialog_id` text NOT NULL,
	`kind` text NOT NULL,
	`vote` text NOT NULL,
	`weight` real NOT NULL,
	`confidence` real NOT NULL,
	`conditions` text NOT NULL,
	`reasoning` text,
	`proposal_hash` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`session_id`, `node_id`)
);
--> statement-breakpoint
CREATE TABLE `governance_principles` (
	`id` text PRIMARY KEY NOT NULL,
	`statement` text NOT NULL,
	`source_session_id` text NOT NULL,
	`confidence` real NOT NULL,
	`status` text NOT NULL,
	`created_at` text NOT NULL,
	`revoked_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `governance_principles_source_session_id_unique` ON `governance_principles` (`source_session_id`);--> statement-breakpoint
CREATE INDEX `governance_principles_status_idx` ON `governance_principles` (`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`summary` text NOT NULL,
	`status` text NOT NULL,
	`proposer_id` text NOT NULL,
	`proposal_id` text NOT NULL,
	`session_id` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `projects_status_idx` ON `projects` (`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `swarm_tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`title` text NOT NULL,
	`body` text NOT NULL,
	`status` text NOT NULL,
	`project_id` text,
	`source_session_id` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `swarm_tasks_status_idx` ON `swarm_tasks` (`status`,`expires_at`);