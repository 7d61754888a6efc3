-- Issue 26 item 5: a direct dialog's statement (src/council/direct-dialog.ts) already reads the session
-- row for its checks, so it decides there whether the dialog moves the session's next progress check,
-- and stores the answer in `check_due_at`: the new check when it moves it, '' when it does not (NULL
-- still marks the session object's own dialogs, whose effects the object writes). The statement returns
-- that column, so the caller knows whether to nudge the object without a second read of the session,
-- and the trigger writes the session only when there is something to write. A term member's first
-- response is found by the absence of an earlier one (the first row found ends the search) rather
-- than by counting all of the node's dialogs in the session.
DROP TRIGGER `council_dialogs_direct_effects`;--> statement-breakpoint
CREATE TRIGGER `council_dialogs_direct_effects` AFTER INSERT ON `council_dialogs` WHEN new.`check_due_at` IS NOT NULL
BEGIN
  UPDATE `nodes` SET `last_dialog_at` = new.`created_at` WHERE `id` = new.`node_id`;
  UPDATE `council_term_members` SET `responses` = MIN(`requests`, `responses` + 1)
  WHERE new.`phase` IN ('diverge', 'challenge') AND new.`dialog_type` <> 'amend'
    AND `term_id` = (SELECT `term_id` FROM `council_sessions` WHERE `id` = new.`session_id`)
    AND `node_id` = new.`node_id`
    AND NOT EXISTS (
      SELECT 1 FROM `council_dialogs` d
      WHERE d.`session_id` = new.`session_id` AND d.`node_id` = new.`node_id` AND d.`id` <> new.`id`
        AND d.`phase` IN ('diverge', 'challenge') AND d.`dialog_type` <> 'amend')
    AND EXISTS (
      SELECT 1 FROM `council_sessions` s, json_each(s.`state`, '$.members') m
      WHERE s.`id` = new.`session_id` AND json_extract(m.value, '$.node_id') = new.`node_id`
        AND json_extract(m.value, '$.replaced_by') IS NULL AND json_extract(m.value, '$.source') = 'term');
  UPDATE `council_sessions` SET `next_check_at` = new.`check_due_at`
  WHERE new.`check_due_at` <> '' AND `id` = new.`session_id`;
END;
