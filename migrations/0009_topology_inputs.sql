-- What the D5 tick reads besides the evidence changes only through these triggers' tables; each write
-- gives topology_inputs a new random token in the same statement, so a tick can reuse what it read at
-- a token while the token stands (src/topology/inputs.ts). Columns no tick reads (an employee's model,
-- an approval's delivery notes) are left out so their writes do not invalidate anything.
CREATE TABLE `topology_inputs` (
	`id` integer PRIMARY KEY NOT NULL,
	`token` text NOT NULL
);--> statement-breakpoint
INSERT INTO `topology_inputs` (`id`, `token`) VALUES (1, 'initial');--> statement-breakpoint
CREATE TRIGGER `topology_inputs_settings_ai` AFTER INSERT ON `settings` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_settings_au` AFTER UPDATE ON `settings` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_settings_ad` AFTER DELETE ON `settings` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_credentials_ai` AFTER INSERT ON `credentials` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_credentials_au` AFTER UPDATE OF `kind`, `role`, `expires_at`, `revoked_at` ON `credentials` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_credentials_ad` AFTER DELETE ON `credentials` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_approvals_ai` AFTER INSERT ON `approvals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_approvals_au` AFTER UPDATE OF `id`, `status`, `expires_at` ON `approvals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_approvals_ad` AFTER DELETE ON `approvals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_topology_proposals_ai` AFTER INSERT ON `topology_proposals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_topology_proposals_au` AFTER UPDATE ON `topology_proposals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_topology_proposals_ad` AFTER DELETE ON `topology_proposals` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_routing_overrides_ai` AFTER INSERT ON `routing_overrides` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_routing_overrides_au` AFTER UPDATE ON `routing_overrides` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_routing_overrides_ad` AFTER DELETE ON `routing_overrides` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_employees_ai` AFTER INSERT ON `employees` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_employees_au` AFTER UPDATE OF `id`, `reports_to` ON `employees` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `topology_inputs_employees_ad` AFTER DELETE ON `employees` BEGIN UPDATE `topology_inputs` SET `token` = lower(hex(randomblob(8))) WHERE `id` = 1; END;
