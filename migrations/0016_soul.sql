-- Issue 23 (SOUL half): SOUL versions, the soul guard's heads and the legacy GVU rounds
-- (src/db/schema/soul.ts). Written by hand: drizzle-kit's diff would also hold the tables of the
-- migrations being written beside it (0017/0018).
CREATE TABLE `soul_versions` (
	`employee_id` text NOT NULL,
	`version` integer NOT NULL,
	`content` text NOT NULL,
	`sha256` text NOT NULL,
	`source` text NOT NULL,
	`reason` text,
	`parent_version` integer,
	`created_at` text NOT NULL,
	`created_by` text NOT NULL,
	`status` text,
	`round_id` text,
	`proposal` text,
	`pre_metrics` text,
	`post_metrics` text,
	`observation_end` text,
	`extensions` integer DEFAULT 0 NOT NULL,
	`rollback_diff` text,
	`decided_at` text,
	`decision` text,
	PRIMARY KEY(`employee_id`, `version`)
);
--> statement-breakpoint
CREATE INDEX `soul_versions_status_idx` ON `soul_versions` (`status`,`observation_end`);--> statement-breakpoint
CREATE TABLE `soul_heads` (
	`employee_id` text PRIMARY KEY NOT NULL,
	`version` integer NOT NULL,
	`sha256` text NOT NULL,
	`updated_at` text NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `gvu_rounds` (
	`id` text PRIMARY KEY NOT NULL,
	`employee_id` text NOT NULL,
	`request_id` text NOT NULL,
	`status` text NOT NULL,
	`base_version` integer NOT NULL,
	`max_generations` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`phase` text,
	`pending_job_id` text,
	`proposal` text,
	`gradients` text NOT NULL,
	`generations` text NOT NULL,
	`trigger_context` text NOT NULL,
	`outcome` text,
	`applied_version` integer,
	`approval_id` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `gvu_rounds_request_id_unique` ON `gvu_rounds` (`request_id`);--> statement-breakpoint
CREATE INDEX `gvu_rounds_employee_idx` ON `gvu_rounds` (`employee_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `gvu_rounds_status_idx` ON `gvu_rounds` (`status`);
