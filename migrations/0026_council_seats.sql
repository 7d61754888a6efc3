-- Issue 41: the seats of each session in a table of their own, so that a direct dialog checks its
-- poster's seat by key instead of parsing the session's whole state JSON (`json_each` over
-- `$.members`) on every post, in the statement and again in its trigger. The table is derived from
-- `council_sessions.state` and written only by the triggers below, in the statement that writes the
-- state: a session's active members (not replaced), with the role a dialog records and the source a
-- term's response counter needs. The proposer has no seat here (the session row names it).
CREATE TABLE `council_seats` (
	`session_id` text NOT NULL,
	`node_id` text NOT NULL,
	`role` text,
	`source` text,
	PRIMARY KEY(`session_id`, `node_id`)
) WITHOUT ROWID;
--> statement-breakpoint
-- What the seats are, once: each session's active members as its state lists them. The backfill and
-- both triggers copy from it. Read only there: the direct dialog reads the table, not this view.
CREATE VIEW `council_session_members` AS
SELECT s.`id` AS `session_id`, json_extract(m.value, '$.node_id') AS `node_id`,
  json_extract(m.value, '$.role') AS `role`, json_extract(m.value, '$.source') AS `source`
FROM `council_sessions` s, json_each(s.`state`, '$.members') m
WHERE json_extract(m.value, '$.replaced_by') IS NULL AND json_extract(m.value, '$.node_id') IS NOT NULL;
--> statement-breakpoint
-- The first active member listed wins should a node be listed twice (as the scalar subquery it replaces did).
INSERT OR IGNORE INTO `council_seats` (`session_id`, `node_id`, `role`, `source`)
SELECT `session_id`, `node_id`, `role`, `source` FROM `council_session_members`;
--> statement-breakpoint
CREATE TRIGGER `council_sessions_seats_opened` AFTER INSERT ON `council_sessions`
BEGIN
  INSERT OR IGNORE INTO `council_seats` (`session_id`, `node_id`, `role`, `source`)
  SELECT `session_id`, `node_id`, `role`, `source` FROM `council_session_members` WHERE `session_id` = new.`id`;
END;
--> statement-breakpoint
-- Only a write of the state whose members differ rebuilds the seats (a direct dialog's trigger writes
-- `next_check_at` alone and never fires this).
CREATE TRIGGER `council_sessions_seats_changed` AFTER UPDATE OF `state` ON `council_sessions`
WHEN json_extract(old.`state`, '$.members') IS NOT json_extract(new.`state`, '$.members')
BEGIN
  DELETE FROM `council_seats` WHERE `session_id` = new.`id`;
  INSERT OR IGNORE INTO `council_seats` (`session_id`, `node_id`, `role`, `source`)
  SELECT `session_id`, `node_id`, `role`, `source` FROM `council_session_members` WHERE `session_id` = new.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `council_sessions_seats_deleted` AFTER DELETE ON `council_sessions`
BEGIN
  DELETE FROM `council_seats` WHERE `session_id` = old.`id`;
END;
--> statement-breakpoint
-- The direct dialog's follow-up writes (migration 0022), with a term member found by its seat.
DROP TRIGGER `council_dialogs_direct_effects`;
--> statement-breakpoint
CREATE TRIGGER `council_dialogs_direct_effects` AFTER INSERT ON `council_dialogs` WHEN new.`check_due_at` IS NOT NULL
BEGIN
  UPDATE `nodes` SET `last_dialog_at` = new.`created_at` WHERE `id` = new.`node_id`;
  UPDATE `council_term_members` SET `responses` = MIN(`requests`, `responses` + 1)
  WHERE new.`phase` IN ('diverge', 'challenge') AND new.`dialog_type` <> 'amend'
    AND `term_id` = (SELECT `term_id` FROM `council_sessions` WHERE `id` = new.`session_id`)
    AND `node_id` = new.`node_id`
    AND EXISTS (
      SELECT 1 FROM `council_seats` t
      WHERE t.`session_id` = new.`session_id` AND t.`node_id` = new.`node_id` AND t.`source` = 'term')
    AND NOT EXISTS (
      SELECT 1 FROM `council_dialogs` d
      WHERE d.`session_id` = new.`session_id` AND d.`node_id` = new.`node_id` AND d.`id` <> new.`id`
        AND d.`phase` IN ('diverge', 'challenge') AND d.`dialog_type` <> 'amend');
  UPDATE `council_sessions` SET `next_check_at` = new.`check_due_at`
  WHERE new.`check_due_at` <> '' AND `id` = new.`session_id`;
END;
