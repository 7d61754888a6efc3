-- Issue 23 (AEE half): the playbook, its rounds, their jobs, rejection telemetry, settle windows and injections
-- (src/db/schema/playbook.ts). Written by hand: drizzle-kit's diff would also hold the tables of the
-- migrations being written beside it (0016_soul, 0018_console).
CREATE TABLE `playbook_entries` (
	`agent_id` text NOT NULL,
	`entry_id` text NOT NULL,
	`category` text NOT NULL,
	`signals_match` text NOT NULL,
	`content` text NOT NULL,
	`eval_cases` text NOT NULL,
	`assertions` text NOT NULL,
	`failure_history` text NOT NULL,
	`applications` text NOT NULL,
	`success_streak` integer NOT NULL,
	`derived_from` text NOT NULL,
	`state` text NOT NULL,
	`state_reason` text,
	`state_since` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `entry_id`)
);
--> statement-breakpoint
CREATE INDEX `playbook_entries_state_idx` ON `playbook_entries` (`agent_id`,`state`);--> statement-breakpoint
CREATE TABLE `playbooks` (
	`agent_id` text PRIMARY KEY NOT NULL,
	`revision` integer NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `aee_rounds` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_id` text NOT NULL,
	`round_seq` integer NOT NULL,
	`request_id` text,
	`status` text NOT NULL,
	`step` text NOT NULL,
	`attempt` integer NOT NULL,
	`state` text NOT NULL,
	`context` text NOT NULL,
	`plan` text NOT NULL,
	`champion` text,
	`candidate` text,
	`approval_id` text,
	`commit_plan` text,
	`end_reason` text,
	`version` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `aee_rounds_seq_idx` ON `aee_rounds` (`agent_id`,`round_seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `aee_rounds_request_idx` ON `aee_rounds` (`request_id`);--> statement-breakpoint
CREATE INDEX `aee_rounds_status_idx` ON `aee_rounds` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `aee_jobs` (
	`job_id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`purpose` text NOT NULL,
	`attempt` integer NOT NULL,
	`case_ref` text,
	`status` text NOT NULL,
	`outcome` text,
	`created_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `aee_jobs_owner_idx` ON `aee_jobs` (`owner_id`,`purpose`,`attempt`);--> statement-breakpoint
CREATE TABLE `aee_rejections` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agent_id` text NOT NULL,
	`round_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`stage` text NOT NULL,
	`gate` text NOT NULL,
	`reason` text NOT NULL,
	`detail` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `aee_rejections_attempt_idx` ON `aee_rejections` (`round_id`,`attempt`);--> statement-breakpoint
CREATE INDEX `aee_rejections_agent_idx` ON `aee_rejections` (`agent_id`,`gate`);--> statement-breakpoint
CREATE TABLE `playbook_settle_items` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_id` text NOT NULL,
	`entry_id` text NOT NULL,
	`round_id` text NOT NULL,
	`item` text NOT NULL,
	`status` text NOT NULL,
	`due_at` text NOT NULL,
	`attempt` integer DEFAULT 0 NOT NULL,
	`verdict` text,
	`created_at` text NOT NULL,
	`settled_at` text
);
--> statement-breakpoint
CREATE INDEX `playbook_settle_due_idx` ON `playbook_settle_items` (`status`,`due_at`);--> statement-breakpoint
CREATE INDEX `playbook_settle_agent_idx` ON `playbook_settle_items` (`agent_id`,`entry_id`);
--> statement-breakpoint
CREATE TABLE `playbook_injections` (
	`conversation_id` text NOT NULL,
	`turn` integer NOT NULL,
	`entry_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`at` text NOT NULL,
	`recorded_at` text,
	PRIMARY KEY(`conversation_id`, `turn`, `entry_id`)
);
--> statement-breakpoint
CREATE INDEX `playbook_injections_pending_idx` ON `playbook_injections` (`recorded_at`,`conversation_id`);
