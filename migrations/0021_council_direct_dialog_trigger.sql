ALTER TABLE `council_dialogs` ADD `check_due_at` text;--> statement-breakpoint
-- Issue 26 item 5: a plain contribution the Worker writes directly (src/council/direct-dialog.ts) is
-- one statement. Its follow-up writes, which were three more statements of the same batch, happen here,
-- in the insert itself, for those rows only (check_due_at set); the session object's dialogs leave it
-- NULL and the object writes their effects itself.
-- 1. the node's last dialog time;
-- 2. a term member's first response in the session (its first dialog in diverge or challenge that is
--    not an amendment, whichever path wrote the earlier ones) counts once toward the term's responses;
-- 3. the session's next progress check is pulled forward to the debounced one this dialog asks for.
CREATE TRIGGER `council_dialogs_direct_effects` AFTER INSERT ON `council_dialogs` WHEN new.`check_due_at` IS NOT NULL
BEGIN
  UPDATE `nodes` SET `last_dialog_at` = new.`created_at` WHERE `id` = new.`node_id`;
  UPDATE `council_term_members` SET `responses` = MIN(`requests`, `responses` + 1)
  WHERE new.`phase` IN ('diverge', 'challenge') AND new.`dialog_type` <> 'amend'
    AND `term_id` = (SELECT `term_id` FROM `council_sessions` WHERE `id` = new.`session_id`)
    AND `node_id` = new.`node_id`
    AND (SELECT COUNT(*) FROM `council_dialogs` d
         WHERE d.`session_id` = new.`session_id` AND d.`node_id` = new.`node_id`
           AND d.`phase` IN ('diverge', 'challenge') AND d.`dialog_type` <> 'amend') = 1
    AND EXISTS (
      SELECT 1 FROM `council_sessions` s, json_each(s.`state`, '$.members') m
      WHERE s.`id` = new.`session_id` AND json_extract(m.value, '$.node_id') = new.`node_id`
        AND json_extract(m.value, '$.replaced_by') IS NULL AND json_extract(m.value, '$.source') = 'term');
  UPDATE `council_sessions` SET `next_check_at` = new.`check_due_at`
  WHERE `id` = new.`session_id` AND (`next_check_at` IS NULL OR `next_check_at` > new.`check_due_at`);
END;
