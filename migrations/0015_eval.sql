-- The capability matrix (issue 22): measurements, their runs, the matrix the composer reads, and the
-- runtimes each runner offers (for the matrix prior).
CREATE TABLE `eval_jobs` (
	`run_id` text NOT NULL,
	`seq` integer NOT NULL,
	`role` text NOT NULL,
	`runtime` text NOT NULL,
	`model` text NOT NULL,
	`domain` text NOT NULL,
	`case_id` text NOT NULL,
	`repeat` integer NOT NULL,
	`status` text NOT NULL,
	`job_id` text,
	`verdict` text,
	`detail` text,
	`reserve_usd` real,
	`cost_usd` real,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`run_id`, `seq`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `eval_jobs_job_idx` ON `eval_jobs` (`job_id`);--> statement-breakpoint
CREATE INDEX `eval_jobs_status_idx` ON `eval_jobs` (`run_id`,`status`,`seq`);--> statement-breakpoint
CREATE TABLE `eval_matrix` (
	`id` integer PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`toml` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `eval_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`status` text NOT NULL,
	`request` text NOT NULL,
	`design` text NOT NULL,
	`resolution` text NOT NULL,
	`total_jobs` integer NOT NULL,
	`budget_usd` real,
	`stop_reason` text,
	`report` text,
	`matrix_toml` text,
	`matrix_refusal` text,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE TABLE `runner_runtimes` (
	`runner_id` text NOT NULL,
	`runtime` text NOT NULL,
	`last_seen_at` text NOT NULL,
	PRIMARY KEY(`runner_id`, `runtime`)
);
--> statement-breakpoint
CREATE INDEX `runner_runtimes_seen_idx` ON `runner_runtimes` (`last_seen_at`);
