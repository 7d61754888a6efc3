CREATE TABLE `conversation_notices` (
	`key` text PRIMARY KEY NOT NULL,
	`conversation_id` text NOT NULL,
	`kind` text NOT NULL,
	`task_id` text NOT NULL,
	`round_id` text,
	`content` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `conversation_notices_conversation_idx` ON `conversation_notices` (`conversation_id`,`at`);--> statement-breakpoint
ALTER TABLE `tasks` ADD `origin_conversation_id` text;