CREATE TABLE `role_turns` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`task_id` text NOT NULL,
	`round_no` integer NOT NULL,
	`role` text NOT NULL,
	`stage` text NOT NULL,
	`stage_id` text NOT NULL,
	`member_id` text,
	`job_id` text,
	`requested_runtime` text NOT NULL,
	`request_model` text NOT NULL,
	`runtime_used` text,
	`response_model` text,
	`provider` text,
	`failover` integer,
	`effort` text,
	`packets` text NOT NULL,
	`evidence_grade` text NOT NULL,
	`outcome` text NOT NULL,
	`failure_edge` text,
	`fault_side` text,
	`config_fingerprint_hard` text NOT NULL,
	`input_tokens` integer,
	`output_tokens` integer,
	`cache_read_input_tokens` integer,
	`cache_creation_input_tokens` integer,
	`usage_legs` integer,
	`cost_usd` real,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `role_turns_stage_id_unique` ON `role_turns` (`stage_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `role_turns_chain_idx` ON `role_turns` (`task_id`,`prev_hash`);--> statement-breakpoint
CREATE INDEX `role_turns_task_idx` ON `role_turns` (`task_id`,`seq`);--> statement-breakpoint
CREATE TABLE `team_packets` (
	`task_id` text NOT NULL,
	`round_no` integer NOT NULL,
	`from_role` text NOT NULL,
	`to_role` text NOT NULL,
	`slot` integer NOT NULL,
	`packet_id` text NOT NULL,
	`body` text NOT NULL,
	`written_by` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`task_id`, `round_no`, `from_role`, `to_role`, `slot`),
	CONSTRAINT "team_packets_slot_range" CHECK("team_packets"."slot" BETWEEN 0 AND 99)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `team_packets_leg_packet_idx` ON `team_packets` (`task_id`,`round_no`,`from_role`,`to_role`,`packet_id`);--> statement-breakpoint
CREATE TABLE `team_round_versions` (
	`round_id` text NOT NULL,
	`version` integer NOT NULL,
	`cause` text NOT NULL,
	`at` text NOT NULL,
	PRIMARY KEY(`round_id`, `version`)
);
--> statement-breakpoint
CREATE TABLE `team_rounds` (
	`id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`round_no` integer NOT NULL,
	`phase` text NOT NULL,
	`state` text NOT NULL,
	`version` integer NOT NULL,
	`started_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `team_rounds_task_round_idx` ON `team_rounds` (`task_id`,`round_no`);--> statement-breakpoint
CREATE INDEX `team_rounds_phase_idx` ON `team_rounds` (`phase`,`updated_at`);--> statement-breakpoint
CREATE TABLE `team_specs` (
	`task_id` text PRIMARY KEY NOT NULL,
	`employee_id` text NOT NULL,
	`spec` text,
	`spec_frozen_at` text,
	`gate` text,
	`refusal` text,
	`goal` text NOT NULL,
	`created_at` text NOT NULL
);
