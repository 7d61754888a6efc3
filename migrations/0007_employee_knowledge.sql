CREATE TABLE `employee_memory` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`employee_id` text NOT NULL,
	`text` text NOT NULL,
	`tags` text DEFAULT '' NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `employee_memory_id_idx` ON `employee_memory` (`id`);--> statement-breakpoint
CREATE INDEX `employee_memory_employee_idx` ON `employee_memory` (`employee_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `employee_wiki` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`employee_id` text NOT NULL,
	`slug` text NOT NULL,
	`title` text NOT NULL,
	`body` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_by` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `employee_wiki_slug_idx` ON `employee_wiki` (`employee_id`,`slug`);