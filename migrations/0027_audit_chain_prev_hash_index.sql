-- Issue 41: the audit chain drops its UNIQUE index on prev_hash. The `audit_chain_next_link` trigger
-- already refuses any row whose prev_hash is not the hash of the row at seq - 1, and seq is the
-- primary key, so two rows can share a prev_hash only if two different entries had the same SHA-256.
-- The index added no guarantee, but its keys are random: each sealing statement (up to 200 entries)
-- wrote about one index page per entry, where the table and the event_id index (whose keys only grow)
-- write a few. Sealing a 20,000-event backlog took 73-87 µs of workerd CPU per event with it and
-- 42-47 µs without (bench/README.md, council, "eighth session"), and the chain stores one
-- 64-character key less per event.
DROP INDEX `audit_chain_prev_hash_unique`;
