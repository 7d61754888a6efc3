-- Issue 26 (hot paths): every dialog post counts the poster's dialogs in the session against the cap;
-- by (session_id, node_id) that is an index range, not a scan of the whole session.
CREATE INDEX `council_dialogs_node_idx` ON `council_dialogs` (`session_id`,`node_id`);