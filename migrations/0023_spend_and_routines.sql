CREATE TABLE `budget_states` (
	`scope` text NOT NULL,
	`scope_id` text NOT NULL,
	`month` text NOT NULL,
	`warned_at` text,
	`exceeded_at` text,
	`lifted_at` text,
	`lifted_by` text,
	PRIMARY KEY(`scope`, `scope_id`, `month`)
);
--> statement-breakpoint
CREATE TABLE `cost_entries` (
	`job_id` text PRIMARY KEY NOT NULL,
	`at` text NOT NULL,
	`day` text NOT NULL,
	`month` text NOT NULL,
	`kind` text NOT NULL,
	`runtime` text NOT NULL,
	`model` text,
	`owner_kind` text NOT NULL,
	`owner_id` text NOT NULL,
	`employee_id` text,
	`project_id` text,
	`input_tokens` integer,
	`output_tokens` integer,
	`cache_read_input_tokens` integer,
	`cache_creation_input_tokens` integer,
	`cost_usd` real
);
--> statement-breakpoint
CREATE INDEX `cost_entries_month_employee_idx` ON `cost_entries` (`month`,`employee_id`);--> statement-breakpoint
CREATE INDEX `cost_entries_month_project_idx` ON `cost_entries` (`month`,`project_id`);--> statement-breakpoint
CREATE INDEX `cost_entries_day_idx` ON `cost_entries` (`day`);--> statement-breakpoint
CREATE TABLE `spend_totals` (
	`scope` text NOT NULL,
	`scope_id` text NOT NULL,
	`month` text NOT NULL,
	`jobs` integer NOT NULL,
	`cost_usd` real,
	`priced_jobs` integer NOT NULL,
	`tokens` integer,
	`token_jobs` integer NOT NULL,
	PRIMARY KEY(`scope`, `scope_id`, `month`)
);
--> statement-breakpoint
CREATE TABLE `routines` (
	`id` text PRIMARY KEY NOT NULL,
	`employee_id` text NOT NULL,
	`name` text NOT NULL,
	`schedule` text NOT NULL,
	`template` text NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`last_slot` text,
	`last_task_id` text,
	`last_fired_at` text,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `routines_employee_idx` ON `routines` (`employee_id`);--> statement-breakpoint
ALTER TABLE `employees` ADD `status` text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE `employees` ADD `paused_reason` text;--> statement-breakpoint
ALTER TABLE `employees` ADD `status_changed_at` text;--> statement-breakpoint
ALTER TABLE `employees` ADD `status_changed_by` text;--> statement-breakpoint
CREATE INDEX `employees_status_idx` ON `employees` (`status`);