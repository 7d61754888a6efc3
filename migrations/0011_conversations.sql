CREATE TABLE `conversation_turns` (
	`conversation_id` text NOT NULL,
	`seq` integer NOT NULL,
	`role` text NOT NULL,
	`content` text NOT NULL,
	`status` text NOT NULL,
	`feedback` text,
	`job_id` text,
	`error` text,
	`at` text NOT NULL,
	PRIMARY KEY(`conversation_id`, `seq`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `conversation_turns_job_idx` ON `conversation_turns` (`job_id`);--> statement-breakpoint
CREATE TABLE `conversations` (
	`id` text PRIMARY KEY NOT NULL,
	`employee_id` text NOT NULL,
	`user_id` text NOT NULL,
	`source` text NOT NULL,
	`status` text NOT NULL,
	`opened_by` text NOT NULL,
	`pending_job_id` text,
	`turn_count` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	`last_activity_at` text NOT NULL,
	`closed_at` text,
	`close_reason` text,
	`outcome` text
);
--> statement-breakpoint
CREATE INDEX `conversations_employee_idx` ON `conversations` (`employee_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `conversations_open_idx` ON `conversations` (`status`,`last_activity_at`);--> statement-breakpoint
CREATE TABLE `evolution_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_id` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`reason` text,
	`conversation_id` text,
	`context` text NOT NULL,
	`job_id` text,
	`created_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `evolution_requests_agent_idx` ON `evolution_requests` (`agent_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `evolution_state` (
	`agent_id` text PRIMARY KEY NOT NULL,
	`thresholds` text NOT NULL,
	`metacognition` text NOT NULL,
	`consecutive_significant` integer DEFAULT 0 NOT NULL,
	`predictions` integer DEFAULT 0 NOT NULL,
	`last_trigger_at` text,
	`last_trigger_kind` text,
	`cooldown_until` text,
	`version` integer NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `prediction_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agent_id` text NOT NULL,
	`user_id` text NOT NULL,
	`conversation_id` text NOT NULL,
	`composite_error` real NOT NULL,
	`category` text NOT NULL,
	`action` text NOT NULL,
	`detail` text NOT NULL,
	`timestamp` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prediction_log_conversation_id_unique` ON `prediction_log` (`conversation_id`);--> statement-breakpoint
CREATE INDEX `prediction_log_agent_idx` ON `prediction_log` (`agent_id`,`id`);--> statement-breakpoint
CREATE INDEX `prediction_log_pair_idx` ON `prediction_log` (`agent_id`,`user_id`,`id`);--> statement-breakpoint
CREATE TABLE `user_models` (
	`user_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`model` text NOT NULL,
	`total_conversations` integer DEFAULT 0 NOT NULL,
	`version` integer NOT NULL,
	`last_updated` text NOT NULL,
	PRIMARY KEY(`user_id`, `agent_id`)
);
--> statement-breakpoint
ALTER TABLE `employee_memory` ADD `importance` real;