-- A node an admin suspended (PATCH /v1/admin/nodes/:id {suspended}): the /a2a heartbeat answers
-- `suspended` and its facade writes are refused until an admin lifts it. NULL: not suspended.
ALTER TABLE `nodes` ADD `suspended_at` text;
