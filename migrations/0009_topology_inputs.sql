-- What the D5 tick reads besides the evidence changes only through the writes these triggers follow;
-- each one gives topology_inputs a new random token in the same statement, so a tick can reuse what it
-- read at a token while the token stands (src/topology/inputs.ts). Only what the tick reads counts: the
-- topology_evolution and approvals config sections, operator credentials (role, expiry, revocation),
-- topology_reroute approvals (status, expiry), reroute proposals, routing overrides and the org
-- (reports_to). Other sections, runner and node tokens, other approvals and an employee's other fields
-- leave the token alone. The names below are REROUTE_ACTION_KIND and the sections' names in src/;
-- test/workers/topology/tick-inputs.http.test.ts writes through those constants.
CREATE TABLE `topology_inputs` (
	`id` integer PRIMARY KEY NOT NULL,
	`token` text NOT NULL
);--> statement-breakpoint
INSERT INTO `topology_inputs` (`id`, `token`) VALUES (1, lower(hex(randomblob(8))));--> statement-breakpoint
CREATE TRIGGER `topology_inputs_settings_ai` AFTER INSERT ON `settings` WHEN new.`section` IN ('topology_evolution', 'approvals') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_settings_au` AFTER UPDATE ON `settings` WHEN new.`section` IN ('topology_evolution', 'approvals') OR old.`section` IN ('topology_evolution', 'approvals') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_settings_ad` AFTER DELETE ON `settings` WHEN old.`section` IN ('topology_evolution', 'approvals') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_credentials_ai` AFTER INSERT ON `credentials` WHEN new.`kind` IN ('operator') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_credentials_au` AFTER UPDATE OF `kind`, `role`, `expires_at`, `revoked_at` ON `credentials` WHEN new.`kind` IN ('operator') OR old.`kind` IN ('operator') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_credentials_ad` AFTER DELETE ON `credentials` WHEN old.`kind` IN ('operator') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_approvals_ai` AFTER INSERT ON `approvals` WHEN new.`action_kind` IN ('topology_reroute') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_approvals_au` AFTER UPDATE OF `id`, `status`, `expires_at` ON `approvals` WHEN new.`action_kind` IN ('topology_reroute') OR old.`action_kind` IN ('topology_reroute') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_approvals_ad` AFTER DELETE ON `approvals` WHEN old.`action_kind` IN ('topology_reroute') BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_topology_proposals_ai` AFTER INSERT ON `topology_proposals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_topology_proposals_au` AFTER UPDATE ON `topology_proposals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_topology_proposals_ad` AFTER DELETE ON `topology_proposals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_routing_overrides_ai` AFTER INSERT ON `routing_overrides` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_routing_overrides_au` AFTER UPDATE ON `routing_overrides` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_routing_overrides_ad` AFTER DELETE ON `routing_overrides` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_employees_ai` AFTER INSERT ON `employees` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_employees_au` AFTER UPDATE OF `id`, `reports_to` ON `employees` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_employees_ad` AFTER DELETE ON `employees` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;
