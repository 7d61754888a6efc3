CREATE TABLE `employee_skills` (
	`employee_id` text NOT NULL,
	`skill_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL,
	`triggers` text NOT NULL,
	`body` text NOT NULL,
	`state` text NOT NULL,
	`state_reason` text,
	`state_since` text NOT NULL,
	`activated_at` text,
	`uses` integer DEFAULT 0 NOT NULL,
	`measured_uses` integer DEFAULT 0 NOT NULL,
	`error_sum` real DEFAULT 0 NOT NULL,
	`baseline_sum` real DEFAULT 0 NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`employee_id`, `skill_id`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `employee_skills_name_idx` ON `employee_skills` (`employee_id`,`name`);--> statement-breakpoint
CREATE INDEX `employee_skills_state_idx` ON `employee_skills` (`employee_id`,`state`);