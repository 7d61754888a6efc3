-- Event retention (issue 26): events older than `[events] retention_days` leave D1 for R2 (gzip NDJSON,
-- one object per day and id range, src/events/retention.ts). Each archived range is one row here, so the
-- audit export finds an archived event by id; the audit chain itself stays in D1.
CREATE TABLE `event_archives` (
	`key` text PRIMARY KEY NOT NULL,
	`day` text NOT NULL,
	`first_id` integer NOT NULL,
	`last_id` integer NOT NULL,
	`events` integer NOT NULL,
	`bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`archived_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `event_archives_first_id_unique` ON `event_archives` (`first_id`);--> statement-breakpoint
CREATE INDEX `event_archives_day_idx` ON `event_archives` (`day`);
