CREATE TABLE `job_attempts` (
	`job_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`runner_id` text,
	`status` text NOT NULL,
	`error` text,
	`started_at` text NOT NULL,
	`ended_at` text,
	`inbox_seq` integer NOT NULL,
	PRIMARY KEY(`job_id`, `attempt`)
);
