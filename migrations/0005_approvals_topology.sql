CREATE TABLE `approvals` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`action_kind` text NOT NULL,
	`subject` text NOT NULL,
	`params` text NOT NULL,
	`action_hash` text NOT NULL,
	`evidence` text NOT NULL,
	`status` text NOT NULL,
	`requested_by` text NOT NULL,
	`requested_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`channels` text NOT NULL,
	`decided_by` text,
	`decided_via` text,
	`decided_at` text,
	`note` text,
	`consumed_at` text,
	`consumed_by` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `approvals_id_unique` ON `approvals` (`id`);--> statement-breakpoint
CREATE INDEX `approvals_status_idx` ON `approvals` (`status`,`expires_at`);--> statement-breakpoint
CREATE TABLE `dispatch_cursors` (
	`task_class` text PRIMARY KEY NOT NULL,
	`counter` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `employees` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`reports_to` text,
	`runtime` text NOT NULL,
	`model_preferred` text NOT NULL,
	`model_effort` text,
	`capabilities` text,
	`sandbox_enabled` integer,
	`config` text DEFAULT '{}' NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `employees_reports_to_idx` ON `employees` (`reports_to`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`title` text NOT NULL,
	`mode` text NOT NULL,
	`tags` text NOT NULL,
	`priority` text NOT NULL,
	`task_class` text NOT NULL,
	`acceptance_criteria` text NOT NULL,
	`assignee` text NOT NULL,
	`assigned_to` text NOT NULL,
	`routed_by` text NOT NULL,
	`route` text NOT NULL,
	`status` text NOT NULL,
	`retry_count` integer DEFAULT 0 NOT NULL,
	`pause_class` text,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	`settled_at` text,
	`settled_by` text
);
--> statement-breakpoint
CREATE INDEX `tasks_evidence_idx` ON `tasks` (`settled_at`,`assigned_to`,`task_class`,`status`,`retry_count`,`pause_class`) WHERE mode = 'goal' AND settled_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `tasks_assignee_idx` ON `tasks` (`assigned_to`,`task_class`,`created_at`);--> statement-breakpoint
CREATE TABLE `routing_overrides` (
	`id` text PRIMARY KEY NOT NULL,
	`proposal_id` text NOT NULL,
	`approval_id` text NOT NULL,
	`task_class` text NOT NULL,
	`from_agent` text NOT NULL,
	`to_agent` text NOT NULL,
	`status` text NOT NULL,
	`approved_at` text NOT NULL,
	`approved_by` text,
	`observe_until` text NOT NULL,
	`baseline_reject_rate` real NOT NULL,
	`baseline_samples` integer NOT NULL,
	`extensions` integer DEFAULT 0 NOT NULL,
	`resolved_at` text,
	`resolution` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `routing_overrides_proposal_id_unique` ON `routing_overrides` (`proposal_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `routing_overrides_in_force_idx` ON `routing_overrides` (`task_class`,`from_agent`) WHERE status IN ('active', 'confirmed');--> statement-breakpoint
CREATE INDEX `routing_overrides_status_idx` ON `routing_overrides` (`status`);--> statement-breakpoint
CREATE TABLE `topology_driver` (
	`id` integer PRIMARY KEY NOT NULL,
	`last_tick_at` text,
	`lease_until` text,
	`lease_token` text,
	`folded_from` text,
	`folded_through` text
);
--> statement-breakpoint
CREATE TABLE `topology_evidence_days` (
	`day` text NOT NULL,
	`agent` text NOT NULL,
	`task_class` text NOT NULL,
	`samples` integer NOT NULL,
	`rejects` integer NOT NULL,
	`needs_human` integer NOT NULL,
	`oscillations` integer NOT NULL,
	PRIMARY KEY(`day`, `agent`, `task_class`)
);
--> statement-breakpoint
CREATE TABLE `topology_proposals` (
	`id` text PRIMARY KEY NOT NULL,
	`task_class` text NOT NULL,
	`from_agent` text NOT NULL,
	`to_agent` text NOT NULL,
	`evidence` text NOT NULL,
	`approval_id` text NOT NULL,
	`status` text NOT NULL,
	`created_at` text NOT NULL,
	`resolved_at` text
);
--> statement-breakpoint
CREATE INDEX `topology_proposals_edge_idx` ON `topology_proposals` (`task_class`,`from_agent`,`created_at`);--> statement-breakpoint
CREATE INDEX `topology_proposals_status_idx` ON `topology_proposals` (`status`);