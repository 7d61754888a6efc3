-- The goal loop (src/team/goal-loop.ts) works every task created through the API unless it is manual.
-- Tasks written before this migration were never worked by anyone but a person, so the default makes
-- them manual: upgrading does not start model work on old rows.
ALTER TABLE `tasks` ADD `manual` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `rounds_budget` integer;--> statement-breakpoint
CREATE INDEX `tasks_worked_idx` ON `tasks` (`assigned_to`,`created_at`) WHERE status = 'assigned' AND manual = 0;