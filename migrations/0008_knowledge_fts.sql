-- Full-text search over an employee's memory and wiki (issue 11 item 6). External-content FTS5
-- indexes keyed by each table's INTEGER PRIMARY KEY, kept in sync by triggers, so every write that
-- lands (in its batch) is searchable at once. The trigram tokenizer matches substrings in any
-- script (Japanese has no spaces for a word tokenizer); src/knowledge/fts.ts builds the queries.
CREATE VIRTUAL TABLE `employee_memory_fts` USING fts5(`text`, `tags`, content='employee_memory', content_rowid='seq', tokenize='trigram');--> statement-breakpoint
CREATE TRIGGER `employee_memory_fts_ai` AFTER INSERT ON `employee_memory` BEGIN INSERT INTO `employee_memory_fts`(rowid, `text`, `tags`) VALUES (new.seq, new.text, new.tags); END;--> statement-breakpoint
CREATE TRIGGER `employee_memory_fts_ad` AFTER DELETE ON `employee_memory` BEGIN INSERT INTO `employee_memory_fts`(`employee_memory_fts`, rowid, `text`, `tags`) VALUES ('delete', old.seq, old.text, old.tags); END;--> statement-breakpoint
CREATE TRIGGER `employee_memory_fts_au` AFTER UPDATE ON `employee_memory` BEGIN INSERT INTO `employee_memory_fts`(`employee_memory_fts`, rowid, `text`, `tags`) VALUES ('delete', old.seq, old.text, old.tags); INSERT INTO `employee_memory_fts`(rowid, `text`, `tags`) VALUES (new.seq, new.text, new.tags); END;--> statement-breakpoint
CREATE VIRTUAL TABLE `employee_wiki_fts` USING fts5(`title`, `body`, content='employee_wiki', content_rowid='seq', tokenize='trigram');--> statement-breakpoint
CREATE TRIGGER `employee_wiki_fts_ai` AFTER INSERT ON `employee_wiki` BEGIN INSERT INTO `employee_wiki_fts`(rowid, `title`, `body`) VALUES (new.seq, new.title, new.body); END;--> statement-breakpoint
CREATE TRIGGER `employee_wiki_fts_ad` AFTER DELETE ON `employee_wiki` BEGIN INSERT INTO `employee_wiki_fts`(`employee_wiki_fts`, rowid, `title`, `body`) VALUES ('delete', old.seq, old.title, old.body); END;--> statement-breakpoint
CREATE TRIGGER `employee_wiki_fts_au` AFTER UPDATE ON `employee_wiki` BEGIN INSERT INTO `employee_wiki_fts`(`employee_wiki_fts`, rowid, `title`, `body`) VALUES ('delete', old.seq, old.title, old.body); INSERT INTO `employee_wiki_fts`(rowid, `title`, `body`) VALUES (new.seq, new.title, new.body); END;
