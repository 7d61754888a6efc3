CREATE TABLE `project_contributions` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`task_id` text,
	`node_id` text NOT NULL,
	`branch` text NOT NULL,
	`commit_sha` text NOT NULL,
	`commit_url` text NOT NULL,
	`parent_sha` text NOT NULL,
	`message` text NOT NULL,
	`files` text NOT NULL,
	`attempts` integer NOT NULL,
	`pr_number` integer,
	`pr_url` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `project_contributions_commit_idx` ON `project_contributions` (`project_id`,`commit_sha`);--> statement-breakpoint
CREATE INDEX `project_contributions_project_idx` ON `project_contributions` (`project_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `project_contributions_task_idx` ON `project_contributions` (`task_id`);--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_state` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_job_id` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_reason` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_detail` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_next_at` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomp_source` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `decomposed_at` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_state` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_full_name` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_url` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_default_branch` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_reason` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `projects` ADD `repo_next_at` text;--> statement-breakpoint
CREATE INDEX `projects_decomp_due_idx` ON `projects` (`status`,`decomp_next_at`);--> statement-breakpoint
CREATE INDEX `projects_repo_due_idx` ON `projects` (`repo_state`,`repo_next_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `projects_repo_full_name_idx` ON `projects` (`repo_full_name`);--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `seq` integer;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `signals` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `weight` real;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `claimed_by` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `claimed_at` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `claim_expires_at` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `completed_by` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `completed_at` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `summary` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `commit_sha` text;--> statement-breakpoint
ALTER TABLE `swarm_tasks` ADD `updated_at` text;--> statement-breakpoint
CREATE INDEX `swarm_tasks_project_idx` ON `swarm_tasks` (`project_id`,`seq`);--> statement-breakpoint
CREATE INDEX `swarm_tasks_created_idx` ON `swarm_tasks` (`created_at`,`id`);